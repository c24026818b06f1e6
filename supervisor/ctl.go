package supervisor

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/terminal"
)

// The control protocol, on ctl.sock. A request is 1 byte of operation, 4
// bytes of big-endian payload length and the payload; the answer is 1 byte
// of status, 4 bytes of length and a message. Requests on one connection
// are served in order.
const (
	opInput      byte = 'i' // payload: bytes for the agent's stdin
	opCloseInput byte = 'c' // no payload
	opSignal     byte = 's' // payload: the signal number, 4 bytes big-endian
	opWait       byte = 'w' // payload: a spool size, 8 bytes big-endian; answered once the spool is longer (OK) or whole (exited)
	opResize     byte = 'r' // payload: columns and rows, 2 bytes big-endian each; a terminal lane's only

	statusOK     byte = 0
	statusError  byte = 1 // the message says what went wrong
	statusExited byte = 2 // the agent has exited

	// maxInputChunk is the most input one request carries; Input splits.
	maxInputChunk = 256 << 10
	// maxRequest bounds what the supervisor reads for one request.
	maxRequest = maxInputChunk
)

func signalPayload(sig syscall.Signal) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(sig))
}

// request sends one request and reads its answer, on the handle's
// connection, dialled on first use. A connection that failed in the middle
// of a request is dropped: what the supervisor made of it is unknown.
func (h *Handle) request(ctx context.Context, op byte, payload []byte) error {
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	if h.conn == nil {
		conn, err := dialCtl(ctx, h.dir)
		if err != nil {
			switch st, serr := h.state(); {
			case serr != nil:
				return errors.Join(err, serr)
			case st == stateExited:
				return ErrExited
			case st == stateLost:
				return ErrLost
			}
			return err
		}
		h.conn = conn
	}
	conn := h.conn
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	status, msg, err := roundTrip(conn, op, payload)
	if !stop() || err != nil {
		// The deadline may have been cut short under a finished request.
		conn.Close()
		h.conn = nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The supervisor drops its connections as it exits.
		switch st, serr := h.state(); {
		case serr == nil && st == stateExited:
			return ErrExited
		case serr == nil && st == stateLost:
			return ErrLost
		}
		return err
	}
	switch status {
	case statusOK:
		return nil
	case statusExited:
		return ErrExited
	}
	return errors.New(msg)
}

func roundTrip(conn net.Conn, op byte, payload []byte) (byte, string, error) {
	if err := writeMsg(conn, op, payload); err != nil {
		return 0, "", err
	}
	status, msg, err := readMsg(conn, maxRequest)
	return status, string(msg), err
}

func writeMsg(w io.Writer, kind byte, payload []byte) error {
	buf := make([]byte, headerLen, headerLen+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(payload)))
	_, err := w.Write(append(buf, payload...))
	return err
}

func readMsg(r io.Reader, limit int) (byte, []byte, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > uint32(limit) {
		return 0, nil, fmt.Errorf("a message of %d bytes (want at most %d)", n, limit)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	return hdr[0], buf, nil
}

// serveCtl accepts control connections until the listener is closed.
func (s *super) serveCtl(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go s.serveConn(conn)
	}
}

func (s *super) serveConn(conn net.Conn) {
	defer conn.Close()
	for {
		op, payload, err := readMsg(conn, maxRequest)
		if err != nil {
			return
		}
		status, msg := s.do(op, payload)
		if err := writeMsg(conn, status, []byte(msg)); err != nil {
			return
		}
	}
}

// do carries out one request.
func (s *super) do(op byte, payload []byte) (byte, string) {
	if op == opWait {
		if len(payload) != 8 {
			return statusError, fmt.Sprintf("a wait request of %d bytes (want 8)", len(payload))
		}
		if s.spool.waitPast(int64(binary.BigEndian.Uint64(payload))) {
			return statusOK, ""
		}
		return statusExited, ""
	}
	if s.exited.Load() {
		return statusExited, ""
	}
	var err error
	switch op {
	case opInput:
		if s.term != nil {
			err = s.term.Input(payload)
		} else {
			err = s.input.write(payload)
		}
	case opCloseInput:
		// A terminal's input stays open until the agent exits.
		s.input.close()
	case opSignal:
		if len(payload) != 4 {
			return statusError, fmt.Sprintf("a signal request of %d bytes (want 4)", len(payload))
		}
		sig := syscall.Signal(binary.BigEndian.Uint32(payload))
		if err = checkSignal(sig); err == nil {
			err = syscall.Kill(-s.pid, sig)
		}
	case opResize:
		switch {
		case len(payload) != 4:
			return statusError, fmt.Sprintf("a resize request of %d bytes (want 4)", len(payload))
		case s.term == nil:
			return statusError, "the agent runs on pipes: it has no terminal to resize"
		}
		err = s.term.Resize(binary.BigEndian.Uint16(payload), binary.BigEndian.Uint16(payload[2:]))
	default:
		return statusError, fmt.Sprintf("unknown request %q", op)
	}
	if errors.Is(err, terminal.ErrExited) {
		return statusExited, ""
	}
	if err != nil {
		return statusError, err.Error()
	}
	return statusOK, ""
}
