package acp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"

	sdk "github.com/coder/acp-go-sdk"
)

// Bounds of the agent's file requests. An agent is not trusted: what it
// asks for must neither exhaust the process nor reach outside the working
// directory.
const (
	// maxReadBytes is the most text one fs/read_text_file returns.
	maxReadBytes = 8 << 20
	// maxScanBytes is the most a read with line and limit goes through to
	// reach its lines: a sparse file may be far larger than the disk.
	maxScanBytes = 64 << 20
	// maxWriteBytes is the most text one fs/write_text_file writes.
	maxWriteBytes = 8 << 20
	// maxFileRequests are served at once per connection; up to
	// maxFileWaiting more wait for a turn, and the rest are refused.
	maxFileRequests = 16
	maxFileWaiting  = 256
)

var (
	// ErrNotRegular reports a file request for a FIFO, a device, a socket
	// or a directory: only regular files are read or written, since
	// reading any other may block or never end.
	ErrNotRegular = errors.New("acp: not a regular file")
	// ErrTooLarge reports a read or write over its bound.
	ErrTooLarge = errors.New("acp: file text too large")
	// ErrTooManyFileRequests reports a file request while the connection
	// serves maxFileRequests and maxFileWaiting more wait.
	ErrTooManyFileRequests = errors.New("acp: too many file requests at once")
)

// fileGate bounds the file requests one connection serves at once. The
// library answers each request on a goroutine of its own; one waiting here
// is parked on a channel and holds no OS thread, and past maxFileWaiting
// the agent is told to wait for its answers instead of queueing more.
type fileGate struct {
	slots chan struct{}

	mu      sync.Mutex
	waiting int
}

func newFileGate() *fileGate {
	return &fileGate{slots: make(chan struct{}, maxFileRequests)}
}

// enter waits for a slot; the caller calls leave when its request is done.
func (g *fileGate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	g.mu.Lock()
	if g.waiting >= maxFileWaiting {
		g.mu.Unlock()
		return fmt.Errorf("%w: %d are being served and %d wait (want at most %d at once and %d waiting: send more once these are answered)",
			ErrTooManyFileRequests, maxFileRequests, maxFileWaiting, maxFileRequests, maxFileWaiting)
	}
	g.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (g *fileGate) leave() { <-g.slots }

// local turns an agent's path (absolute, as ACP requires) into one relative
// to the working directory, refusing a path not inside it by its name. It
// does not look at the disk: the path is opened through an os.Root, which
// refuses a symbolic link that leads outside.
func (c *Client) local(path string) (string, error) {
	dir := c.cfg.Dir
	if dir == "" || !filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %q is not an absolute path in %s", ErrOutsideDir, path, dir)
	}
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s is not in %s", ErrOutsideDir, path, dir)
	}
	return rel, nil
}

// openIn opens path inside the working directory through an os.Root: no
// component, a symbolic link included, may lead outside it (a link is
// followed only when it is relative and stays inside, and a dangling one
// is never created through), and the handle returned is the file checked
// and used, so nothing can be swapped in between. O_NONBLOCK keeps the
// open of a FIFO from waiting for its other end.
// want names what is accepted, for the error.
func (c *Client) openIn(path string, flag int, perm os.FileMode, mkdir bool, want string) (*os.File, error) {
	rel, err := c.local(path)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(c.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("open the working directory: %w", err)
	}
	defer root.Close()
	if mkdir {
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return nil, fmt.Errorf("%w (want a directory inside %s, reached by symbolic links, if any, that are relative and stay inside it)", err, c.cfg.Dir)
		}
	}
	f, err := root.OpenFile(rel, flag|syscall.O_NONBLOCK, perm)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w (want %s inside %s, reached by symbolic links, if any, that are relative and stay inside it)", err, want, c.cfg.Dir)
	}
	return f, nil
}

// openRegular is openIn of a regular file: anything else is closed and
// refused.
func (c *Client) openRegular(path string, flag int, perm os.FileMode, mkdir bool) (*os.File, os.FileInfo, error) {
	f, err := c.openIn(path, flag, perm, mkdir, "a regular file")
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%w: %s is a %s (want a regular file)", ErrNotRegular, path, fileKind(fi.Mode()))
	}
	return f, fi, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// openDir opens path, a directory inside the working directory, as openIn
// does, for terminal/create's cwd.
func (c *Client) openDir(path string) (*os.File, error) {
	return c.openIn(path, os.O_RDONLY|syscall.O_DIRECTORY, 0, false, "a directory")
}

// dirName is a name of the directory open as f, for a child's working
// directory. On Linux it is the descriptor's entry in /proc, which names
// that very directory whatever is renamed or replaced at path after it was
// checked; elsewhere it is path.
func dirName(f *os.File, path string) string {
	if name := "/proc/self/fd/" + strconv.Itoa(int(f.Fd())); fileExists(name) {
		return name
	}
	return path
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

func (h handler) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if err := h.c.files.enter(ctx); err != nil {
		return sdk.ReadTextFileResponse{}, h.refuse(sdk.ClientMethodFsReadTextFile, err)
	}
	defer h.c.files.leave()
	f, fi, err := h.c.openRegular(p.Path, os.O_RDONLY, 0, false)
	if errors.Is(err, fs.ErrNotExist) {
		// An answer, not a refusal: agents read to learn whether a file exists.
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: errCodeNotFound, Message: "Resource not found: " + p.Path}
	}
	if err != nil {
		return sdk.ReadTextFileResponse{}, h.refuse(sdk.ClientMethodFsReadTextFile, err)
	}
	defer f.Close()
	from, limit := 0, -1
	if p.Line != nil && *p.Line > 1 {
		from = *p.Line - 1
	}
	if p.Limit != nil && *p.Limit >= 0 {
		limit = *p.Limit
	}
	if p.Line == nil && p.Limit == nil && fi.Size() > maxReadBytes {
		return sdk.ReadTextFileResponse{}, h.refuse(sdk.ClientMethodFsReadTextFile,
			fmt.Errorf("%w: %s holds %d bytes (want at most %d in one read: ask for fewer lines with line and limit)", ErrTooLarge, p.Path, fi.Size(), maxReadBytes))
	}
	text, err := readLines(ctx, f, from, limit)
	if err != nil {
		return sdk.ReadTextFileResponse{}, h.refuse(sdk.ClientMethodFsReadTextFile, fmt.Errorf("read %s: %w", p.Path, err))
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// readLines reads limit lines (all for a negative limit) from line from
// (0-based) of r, a line ending after its "\n" or at the end. It holds at
// most maxReadBytes of text and goes through at most maxScanBytes, so
// neither a huge file nor a huge line is ever held whole.
func readLines(ctx context.Context, r io.Reader, from, limit int) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []byte
	scanned := 0
	for line := 0; limit < 0 || line < from+limit; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		chunk, err := br.ReadSlice('\n')
		scanned += len(chunk)
		if line >= from {
			if len(out)+len(chunk) > maxReadBytes {
				return "", fmt.Errorf("%w: the lines asked for hold more than %d bytes (want at most %d in one read: ask for fewer with limit)", ErrTooLarge, maxReadBytes, maxReadBytes)
			}
			if need := len(out) + len(chunk); need > cap(out) {
				// Doubling, up to the bound: append grows a large slice
				// by a quarter at a time, which allocates several times
				// the text on its way to the bound.
				out = slices.Grow(out, min(max(2*cap(out), need), maxReadBytes)-len(out))
			}
			out = append(out, chunk...)
		} else if scanned > maxScanBytes {
			return "", fmt.Errorf("%w: line %d starts beyond the first %d bytes (want lines within them)", ErrTooLarge, from+1, maxScanBytes)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// The same line goes on.
		case errors.Is(err, io.EOF):
			return string(out), nil
		case err != nil:
			return "", err
		default:
			line++
		}
	}
	return string(out), nil
}

func (h handler) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if len(p.Content) > maxWriteBytes {
		return sdk.WriteTextFileResponse{}, h.refuse(sdk.ClientMethodFsWriteTextFile,
			fmt.Errorf("%w: %d bytes for %s (want at most %d in one write)", ErrTooLarge, len(p.Content), p.Path, maxWriteBytes))
	}
	if err := h.c.files.enter(ctx); err != nil {
		return sdk.WriteTextFileResponse{}, h.refuse(sdk.ClientMethodFsWriteTextFile, err)
	}
	defer h.c.files.leave()
	// No O_TRUNC: a file is emptied only once it is known to be regular.
	f, _, err := h.c.openRegular(p.Path, os.O_WRONLY|os.O_CREATE, 0o644, true)
	if err != nil {
		return sdk.WriteTextFileResponse{}, h.refuse(sdk.ClientMethodFsWriteTextFile, err)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteString(p.Content)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sdk.WriteTextFileResponse{}, h.refuse(sdk.ClientMethodFsWriteTextFile, fmt.Errorf("write %s: %w", p.Path, err))
	}
	return sdk.WriteTextFileResponse{}, nil
}
