package outputlog

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Streams an output line comes from. They are written into the files:
// never rename one.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

const (
	// DefaultLimit bounds each of an execution's two files when
	// Options.Limit is 0.
	DefaultLimit = 1 << 20
	// MinLimit is the smallest limit accepted: it leaves room for a
	// clipped line however its bytes are escaped.
	MinLimit = 4 << 10
	// MaxLine is the longest line kept whole; a longer one is cut.
	MaxLine = 64 << 10

	currentSuffix = ".output.jsonl"
	rotatedSuffix = ".output.1.jsonl"
)

// ErrInvalidLimit reports a limit below MinLimit.
var ErrInvalidLimit = errors.New("outputlog: limit below the minimum")

// Entry is one kept line.
type Entry struct {
	N       uint64    `json:"n"`
	Time    time.Time `json:"t"`
	Stream  string    `json:"stream"`
	Line    string    `json:"line"`
	Clipped bool      `json:"clipped,omitempty"`
}

// Paths returns the current and the rotated file of an execution.
func Paths(dir, id string) (current, rotated string, err error) {
	esc, err := eventstore.EscapeID(id)
	if err != nil {
		return "", "", fmt.Errorf("output path: agent execution id: %w", err)
	}
	return filepath.Join(dir, esc+currentSuffix), filepath.Join(dir, esc+rotatedSuffix), nil
}

// Options configures a Writer.
type Options struct {
	// Limit bounds each file, in bytes; DefaultLimit when 0, at least
	// MinLimit.
	Limit int64
	// Now is the clock of the entries' times; time.Now when nil.
	Now func() time.Time
}

// Writer appends the kept lines of one execution. It is safe for
// concurrent use: an agent's two streams are read on two goroutines.
type Writer struct {
	path, rotated string
	limit         int64
	now           func() time.Time

	mu   sync.Mutex
	f    *os.File
	size int64
	last uint64
}

// Open opens an execution's output for appending, creating the directory
// and the file when missing. A file written before (a runtime restarted
// while its agent ran on) is continued: its numbering goes on, and a line
// torn by a crash is dropped.
func Open(dir, id string, opts Options) (*Writer, error) {
	if opts.Limit == 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Limit < MinLimit {
		return nil, fmt.Errorf("%w: %d bytes (want at least %d)", ErrInvalidLimit, opts.Limit, MinLimit)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	path, rotated, err := Paths(dir, id)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, rotated: rotated, limit: opts.Limit, now: opts.Now, f: f}
	if err := w.resume(); err != nil {
		f.Close()
		return nil, fmt.Errorf("continue %s: %w", path, err)
	}
	return w, nil
}

// resume finds the end of the whole lines of the current file and the last
// number written, in it or, when it is empty, in the rotated file.
func (w *Writer) resume() error {
	data, err := io.ReadAll(w.f)
	if err != nil {
		return err
	}
	end := bytes.LastIndexByte(data, '\n') + 1
	if err := w.f.Truncate(int64(end)); err != nil {
		return err
	}
	if _, err := w.f.Seek(int64(end), io.SeekStart); err != nil {
		return err
	}
	w.size = int64(end)
	if end == 0 {
		if data, err = os.ReadFile(w.rotated); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		end = bytes.LastIndexByte(data, '\n') + 1
	}
	if end == 0 {
		return nil
	}
	start := bytes.LastIndexByte(data[:end-1], '\n') + 1
	var e Entry
	if err := json.Unmarshal(data[start:end], &e); err != nil {
		return fmt.Errorf("last line: %w", err)
	}
	w.last = e.N
	return nil
}

// Write keeps one line of a stream; line holds no newline.
func (w *Writer) Write(stream string, line []byte) error {
	e := Entry{Time: w.now().UTC(), Stream: stream}
	if max := min(MaxLine, int(w.limit/8)); len(line) > max {
		// Cut on a character boundary: limit/8 leaves room for the cut
		// line even if every byte is escaped (\u00XX, 6 bytes).
		for max > 0 && !utf8.RuneStart(line[max]) {
			max--
		}
		line, e.Clipped = line[:max], true
	}
	e.Line = string(line)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("write %s: %w", w.path, os.ErrClosed)
	}
	e.N = w.last + 1
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if w.size > 0 && w.size+int64(len(data)) > w.limit {
		if err := w.rotate(); err != nil {
			return fmt.Errorf("rotate %s: %w", w.path, err)
		}
	}
	// One write call per line, so a reader never sees half of one but at
	// the end of the file.
	n, err := w.f.Write(data)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	w.last = e.N
	return nil
}

// rotate moves the current file to the rotated name and starts a new one.
func (w *Writer) rotate() error {
	if err := os.Rename(w.path, w.rotated); err != nil {
		return err
	}
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w.f.Close()
	w.f, w.size = f, 0
	return nil
}

// Close closes the file; it is safe to call twice.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Page is a read of an execution's output.
type Page struct {
	// Entries are the lines asked for, in order.
	Entries []Entry
	// First is the number of the oldest line still kept; 0 when none is.
	First uint64
	// Last is the number of the newest line written; 0 when none is.
	Last uint64
	// Next is the number to read from to continue after this page.
	Next uint64
}

// Read returns up to limit lines numbered from, of stream when not empty.
// Lines rotated away are gone: the page starts at the oldest kept one. An
// execution with no output file reads as empty.
func Read(dir, id string, from uint64, limit int, stream string) (Page, error) {
	all, err := readAll(dir, id)
	if err != nil {
		return Page{}, err
	}
	p := pageOf(all)
	p.Next = max(from, p.Last+1)
	i, _ := slices.BinarySearchFunc(all, from, func(e Entry, n uint64) int { return cmp.Compare(e.N, n) })
	for _, e := range all[i:] {
		if len(p.Entries) == limit {
			p.Next = e.N
			break
		}
		if stream == "" || e.Stream == stream {
			p.Entries = append(p.Entries, e)
		}
	}
	return p, nil
}

// Tail returns the last n lines, of stream when not empty.
func Tail(dir, id string, n int, stream string) (Page, error) {
	all, err := readAll(dir, id)
	if err != nil {
		return Page{}, err
	}
	p := pageOf(all)
	for i := len(all) - 1; i >= 0 && len(p.Entries) < n; i-- {
		if stream == "" || all[i].Stream == stream {
			p.Entries = append(p.Entries, all[i])
		}
	}
	slices.Reverse(p.Entries)
	p.Next = p.Last + 1
	return p, nil
}

func pageOf(all []Entry) Page {
	if len(all) == 0 {
		return Page{}
	}
	return Page{First: all[0].N, Last: all[len(all)-1].N}
}

// readAll reads both files of an execution, in order. The current file is
// opened first: a rotation between the two opens then shows the same lines
// twice, which are dropped by number, rather than losing some.
func readAll(dir, id string) ([]Entry, error) {
	path, rotated, err := Paths(dir, id)
	if err != nil {
		return nil, err
	}
	cur, err := openIfExists(path)
	if err != nil {
		return nil, err
	}
	old, err := openIfExists(rotated)
	if err != nil {
		return nil, errors.Join(err, closeIf(cur))
	}
	defer closeIf(cur)
	defer closeIf(old)
	var all []Entry
	for _, f := range []*os.File{old, cur} {
		if f == nil {
			continue
		}
		if all, err = readFile(f, all); err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}
	slices.SortStableFunc(all, func(a, b Entry) int { return cmp.Compare(a.N, b.N) })
	return slices.CompactFunc(all, func(a, b Entry) bool { return a.N == b.N }), nil
}

func openIfExists(path string) (*os.File, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

func closeIf(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}

// readFile appends the whole lines of f; a last line without its newline
// is still being written, and is left for the next read. A line that is
// not an entry (the file was edited by hand) is passed over: this is
// evidence to read, and one bad line must not hide the others.
func readFile(f *os.File, all []Entry) ([]Entry, error) {
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return all, nil
		}
		if err != nil {
			return nil, err
		}
		var e Entry
		if json.Unmarshal(line, &e) == nil && e.N > 0 {
			all = append(all, e)
		}
	}
}
