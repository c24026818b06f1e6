package supervisor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// A spool frame is 1 byte of stream, 4 bytes of big-endian data length,
// then the data. The supervisor writes each frame with one write call, in
// the order it read the pipes.
const (
	headerLen = 5
	// maxChunk is the most one pipe read puts in a frame: a pipe's default
	// capacity on Linux.
	maxChunk = 64 << 10
	// maxFrameData bounds the length a reader accepts, so that garbage read
	// as a header is reported instead of allocated.
	maxFrameData = 1 << 20
)

// spool appends frames to the out file. Nothing is synced per frame: the
// page cache outlives the daemon crash the spool is for; a machine crash
// may lose its tail, and exit.json is written only after a sync.
type spool struct {
	mu   sync.Mutex
	f    *os.File
	size int64 // the end of the last whole frame
	err  error // the first write error; output after it is dropped
	// grown is closed and replaced as the spool grows, and closed for good
	// once both pipes have ended, to wake the readers waiting on it.
	grown chan struct{}
	ended bool
}

func newSpool(f *os.File) *spool { return &spool{f: f, grown: make(chan struct{})} }

// append writes a frame whose data is buf[headerLen:]; the header is filled
// in here.
func (s *spool) append(stream Stream, buf []byte) {
	buf[0] = byte(stream)
	binary.BigEndian.PutUint32(buf[1:headerLen], uint32(len(buf)-headerLen))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	if _, err := s.f.Write(buf); err != nil {
		// A part of a frame would read as a torn tail: cut it off, so the
		// spool stays whole up to where output went missing.
		s.err = errors.Join(fmt.Errorf("write the spool at byte %d: %w", s.size, err), s.f.Truncate(s.size))
		return
	}
	s.size += int64(len(buf))
	close(s.grown)
	s.grown = make(chan struct{})
}

// end marks the spool whole: no frame follows.
func (s *spool) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.grown)
	}
}

// waitPast returns true once the spool is longer than off, false once it
// has ended short of that.
func (s *spool) waitPast(off int64) bool {
	for {
		s.mu.Lock()
		size, ended, grown := s.size, s.ended, s.grown
		s.mu.Unlock()
		switch {
		case size > off:
			return true
		case ended:
			return false
		}
		<-grown
	}
}

// pump copies one of the agent's pipes into the spool until it ends.
func (s *spool) pump(stream Stream, r io.Reader) {
	buf := make([]byte, headerLen+maxChunk)
	for {
		n, err := r.Read(buf[headerLen:])
		if n > 0 {
			s.append(stream, buf[:headerLen+n])
		}
		if err != nil {
			return
		}
	}
}

// Poll intervals of a reader that cannot wait on the supervisor: in the
// moments between the spool's end and exit.json, or while the supervisor
// closes its socket.
const (
	minPoll = time.Millisecond
	maxPoll = 16 * time.Millisecond
)

// spoolReader reads frames from a state directory's spool.
type spoolReader struct {
	h     *Handle
	f     *os.File
	buf   []byte
	start int   // buf[start:end] is read and not yet returned
	end   int   //
	off   int64 // the spool offset of buf[start]
	// final is set once exit.json or the supervisor's death was seen: what
	// the file holds after the next read is all it will ever hold.
	final bool
	lost  bool
	// waiter is the reader's own connection to the supervisor, to wait for
	// the spool to grow.
	waiter waiter
}

func (h *Handle) openSpool(from int64) (*spoolReader, error) {
	if from < 0 {
		return nil, fmt.Errorf("read output from %d: negative offset", from)
	}
	f, err := os.Open(h.path(outFile))
	if err != nil {
		return nil, fmt.Errorf("read output: %w", err)
	}
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return nil, errors.Join(fmt.Errorf("read output: %w", err), f.Close())
	}
	return &spoolReader{h: h, f: f, buf: make([]byte, 256<<10), off: from}, nil
}

// next returns the next whole frame, waiting for it while the supervisor
// runs; io.EOF once the agent has exited and every frame was returned.
func (r *spoolReader) next(ctx context.Context) (Frame, error) {
	poll := minPoll
	for {
		if err := ctx.Err(); err != nil {
			return Frame{}, err
		}
		fr, ok, err := r.parse()
		if ok || err != nil {
			return fr, err
		}
		n, err := r.fill()
		if n > 0 {
			poll = minPoll
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return Frame{}, fmt.Errorf("read output: %w", err)
		}
		if r.final {
			return Frame{}, r.finish()
		}
		switch st, err := r.h.state(); {
		case err != nil:
			return Frame{}, err
		case st == stateRunning:
			grown, err := r.waiter.waitPast(ctx, r.h.dir, r.off+int64(r.end-r.start))
			if err != nil {
				return Frame{}, err
			}
			if grown {
				continue
			}
			if err := sleep(ctx, poll); err != nil {
				return Frame{}, err
			}
			poll = min(2*poll, maxPoll)
		default:
			// The supervisor wrote its last frame before it recorded the
			// exit or died, maybe after the read above: one more gets it.
			r.final, r.lost = true, st == stateLost
		}
	}
}

// finish is the end of a spool whose supervisor is gone.
func (r *spoolReader) finish() error {
	if r.lost {
		// A part of a frame is a write the kill cut short; it is no output.
		return ErrLost
	}
	if r.end > r.start {
		return fmt.Errorf("%w: %d bytes at offset %d end the spool of an exited agent", ErrCorrupt, r.end-r.start, r.off)
	}
	st, _ := r.h.Exited()
	if st.OutputError != "" {
		return fmt.Errorf("%w: %s", ErrOutputIncomplete, st.OutputError)
	}
	return io.EOF
}

// parse takes a whole frame off the buffer.
func (r *spoolReader) parse() (Frame, bool, error) {
	b := r.buf[r.start:r.end]
	if len(b) < headerLen {
		return Frame{}, false, nil
	}
	stream, n := Stream(b[0]), binary.BigEndian.Uint32(b[1:headerLen])
	if (stream != Stdout && stream != Stderr) || n > maxFrameData {
		return Frame{}, false, fmt.Errorf("%w at offset %d of %s", ErrCorrupt, r.off, r.h.path(outFile))
	}
	size := headerLen + int(n)
	if len(b) < size {
		return Frame{}, false, nil
	}
	r.start += size
	r.off += int64(size)
	return Frame{Stream: stream, Data: b[headerLen:size:size], End: r.off}, true, nil
}

// fill reads more of the file into the buffer, making room first: the
// frames returned so far are dropped (their Data with them), and the
// buffer grows to hold the frame at its start.
func (r *spoolReader) fill() (int, error) {
	if r.start == r.end {
		r.start, r.end = 0, 0
	}
	need := headerLen
	if b := r.buf[r.start:r.end]; len(b) >= headerLen {
		need = headerLen + int(binary.BigEndian.Uint32(b[1:headerLen]))
	}
	switch {
	case len(r.buf) < need:
		nb := make([]byte, max(need, 2*len(r.buf)))
		r.end = copy(nb, r.buf[r.start:r.end])
		r.start, r.buf = 0, nb
	case r.start > 0 && len(r.buf)-r.end < minRead:
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	n, err := r.f.Read(r.buf[r.end:])
	r.end += n
	return n, err
}

// minRead is the least room fill reads into, so that a reader close to
// the writer does not crawl along in tiny reads.
const minRead = 64 << 10

func (r *spoolReader) close() error { return errors.Join(r.waiter.close(), r.f.Close()) }

// waiter waits on the supervisor's socket for the spool to grow: no
// polling, and a supervisor's death ends the wait at once, as the kernel
// closes its end.
type waiter struct {
	conn   net.Conn
	failed bool // the socket failed once: the supervisor is ending
}

// waitPast returns true once the spool is longer than off; false, at once,
// when it has ended or the supervisor cannot be asked, for the caller to
// look at the state directory.
func (w *waiter) waitPast(ctx context.Context, dir string, off int64) (bool, error) {
	if w.failed {
		return false, nil
	}
	if w.conn == nil {
		conn, err := dialCtl(ctx, dir)
		if err != nil {
			w.failed = true
			return false, ctx.Err()
		}
		w.conn = conn
	}
	conn := w.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	status, _, err := roundTrip(conn, opWait, binary.BigEndian.AppendUint64(nil, uint64(off)))
	if err != nil {
		w.failed = true
		w.close()
		return false, ctx.Err()
	}
	return status == statusOK, nil
}

func (w *waiter) close() error {
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
