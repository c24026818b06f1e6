package terminal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Event codes written to recordings. asciicast v2 defines these four; the
// exit is a marker so that asciinema can still play the file.
const (
	CodeOutput = "o"
	CodeInput  = "i"
	CodeResize = "r"
	CodeMarker = "m"
)

// ExitMarkerPrefix starts the data of the marker written when the process
// exits: "exit <code>".
const ExitMarkerPrefix = "exit "

// recordingSuffix ends every recording file name.
const recordingSuffix = ".terminal.jsonl"

const (
	// flushInterval bounds how long an event stays in the write buffer.
	flushInterval = 100 * time.Millisecond
	// recordingBufferSize is the write buffer of one recording.
	recordingBufferSize = 64 << 10
	// maxRecordingsPerExecution bounds the numbered files of one execution.
	maxRecordingsPerExecution = 1000
	// maxRecordingLine bounds one line read by ReadRecording.
	maxRecordingLine = 16 << 20
	// keepScratch is the largest scratch buffer kept between events.
	keepScratch = 256 << 10
)

// ErrInvalidRecording reports a recording that is not a well-formed
// asciicast v2 file as this package writes it. Errors wrapping it are
// *RecordingError values naming the line.
var ErrInvalidRecording = errors.New("terminal: invalid recording")

// RecordingError is a problem on one line of a recording.
type RecordingError struct {
	Line   int // 1-based; line 1 is the header
	Reason string
}

func (e *RecordingError) Error() string {
	return fmt.Sprintf("terminal recording line %d: %s", e.Line, e.Reason)
}

// Is reports whether target is ErrInvalidRecording.
func (e *RecordingError) Is(target error) bool { return target == ErrInvalidRecording }

// Header is the first line of an asciicast v2 recording.
type Header struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp,omitempty"` // Unix seconds
	Command   string            `json:"command,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// Event is one line after the header: [Time, Code, Data].
type Event struct {
	Time float64 // seconds since the recording started
	Code string  // CodeOutput, CodeInput, CodeResize or CodeMarker
	Data string
}

// RecordingPath returns the path of the first recording of an execution:
// <dir>/<EscapeID(agentExecutionID)>.terminal.jsonl. The escaped id holds
// no separator, dot or "..", so the path always stays inside dir.
func RecordingPath(dir, agentExecutionID string) (string, error) {
	esc, err := eventstore.EscapeID(agentExecutionID)
	if err != nil {
		return "", fmt.Errorf("recording path: agent execution id: %w", err)
	}
	return recordingName(dir, esc, 1), nil
}

// recordingName names the n-th recording of an execution: the first is
// <esc>.terminal.jsonl, later ones <esc>.<n>.terminal.jsonl.
func recordingName(dir, esc string, n int) string {
	if n == 1 {
		return filepath.Join(dir, esc+recordingSuffix)
	}
	return filepath.Join(dir, esc+"."+strconv.Itoa(n)+recordingSuffix)
}

// recorder appends one asciicast v2 recording. Events may come from several
// goroutines; each is stamped and written under mu, so times never
// decrease. Writes are buffered and flushed by flushLoop at least every
// flushInterval, and by finish. After the first write error the recording
// stops; finish reports the error.
type recorder struct {
	path      string
	start     time.Time
	stopFlush chan struct{}

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	last    float64
	out, in utf8Carry
	line    []byte
	dirty   bool
	closed  bool
	err     error
}

// createRecording creates the next free recording file of an execution in
// dir (0700) with mode 0600, and writes and flushes its header.
func createRecording(dir, agentExecutionID string, h Header, start time.Time) (*recorder, error) {
	esc, err := eventstore.EscapeID(agentExecutionID)
	if err != nil {
		return nil, fmt.Errorf("create recording: agent execution id: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create recording: %w", err)
	}
	var f *os.File
	for n := 1; ; n++ {
		if n > maxRecordingsPerExecution {
			return nil, fmt.Errorf("create recording: %s already has %d recordings in %s", agentExecutionID, maxRecordingsPerExecution, dir)
		}
		f, err = os.OpenFile(recordingName(dir, esc, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create recording: %w", err)
		}
	}
	r := &recorder{
		path:      f.Name(),
		start:     start,
		stopFlush: make(chan struct{}),
		f:         f,
		w:         bufio.NewWriterSize(f, recordingBufferSize),
	}
	line, err := json.Marshal(h)
	if err == nil {
		_, err = r.w.Write(append(line, '\n'))
	}
	if err == nil {
		err = r.w.Flush()
	}
	if err != nil {
		r.abandon()
		return nil, fmt.Errorf("create recording %s: %w", r.path, err)
	}
	return r, nil
}

// abandon closes and removes a recording whose process never started.
func (r *recorder) abandon() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	_ = r.f.Close()
	_ = os.Remove(r.path)
}

func (r *recorder) output(p []byte) { r.write(CodeOutput, p, &r.out) }

func (r *recorder) input(p []byte) { r.write(CodeInput, p, &r.in) }

func (r *recorder) resize(cols, rows uint16) {
	r.write(CodeResize, fmt.Appendf(nil, "%dx%d", cols, rows), nil)
}

// write records one event. Output and input pass through their own carry,
// so a rune split across two chunks lands whole in the later event.
func (r *recorder) write(code string, data []byte, carry *utf8Carry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.err != nil {
		return
	}
	if carry != nil {
		data = carry.complete(data)
	}
	if len(data) > 0 {
		r.eventLocked(code, data)
	}
}

func (r *recorder) eventLocked(code string, data []byte) {
	t := time.Since(r.start).Seconds()
	if t < r.last {
		t = r.last
	}
	r.last = t
	b := append(r.line[:0], '[')
	b = strconv.AppendFloat(b, t, 'f', 6, 64)
	b = append(b, ", \""...)
	b = append(b, code...)
	b = append(b, "\", "...)
	b = appendJSONString(b, data)
	b = append(b, "]\n"...)
	if _, err := r.w.Write(b); err != nil {
		r.err = err
	}
	r.dirty = true
	if cap(b) > keepScratch {
		b = nil
	}
	r.line = b
}

// flushLoop flushes buffered events every flushInterval until finish.
func (r *recorder) flushLoop() {
	ticker := time.NewTicker(flushInterval)
	defer ticker.Stop()
	for {
		select {
		case <-r.stopFlush:
			return
		case <-ticker.C:
		}
		r.mu.Lock()
		if r.dirty && !r.closed && r.err == nil {
			r.err = r.w.Flush()
			r.dirty = false
		}
		r.mu.Unlock()
	}
}

// finish writes what the carries still hold (as U+FFFD: those bytes never
// became a rune), the exit marker, flushes, syncs and closes the file.
func (r *recorder) finish(exitCode int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	close(r.stopFlush)
	if r.err == nil {
		if rest := r.out.rest(); len(rest) > 0 {
			r.eventLocked(CodeOutput, rest)
		}
		if rest := r.in.rest(); len(rest) > 0 {
			r.eventLocked(CodeInput, rest)
		}
		r.eventLocked(CodeMarker, []byte(ExitMarkerPrefix+strconv.Itoa(exitCode)))
	}
	if r.err == nil {
		r.err = r.w.Flush()
	}
	if r.err == nil {
		r.err = r.f.Sync()
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	return r.err
}

// utf8Carry holds back an incomplete UTF-8 sequence at the end of a chunk
// until the next chunk completes it.
type utf8Carry struct {
	held   [utf8.UTFMax]byte
	n      int
	joined []byte
}

// complete returns the held bytes followed by p, up to the start of an
// incomplete trailing sequence, which it holds back. The result is valid
// until the next call.
func (c *utf8Carry) complete(p []byte) []byte {
	if c.n > 0 {
		if cap(c.joined) > keepScratch {
			c.joined = nil
		}
		c.joined = append(append(c.joined[:0], c.held[:c.n]...), p...)
		p = c.joined
		c.n = 0
	}
	cut := completeLen(p)
	c.n = copy(c.held[:], p[cut:])
	return p[:cut]
}

// rest returns and forgets the held bytes.
func (c *utf8Carry) rest() []byte {
	b := c.held[:c.n]
	c.n = 0
	return b
}

// completeLen returns len(p) minus a trailing sequence that is the valid
// beginning of a longer rune. Invalid bytes are not held back: they will
// never become a rune.
func completeLen(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			return len(p)
		}
	}
	return len(p)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 bytes become
// U+FFFD, one for each byte, as encoding/json does.
func appendJSONString(dst, s []byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// headerFields are the header keys of asciicast v2. Keys outside this set
// are rejected.
type headerFields struct {
	Version       *int              `json:"version"`
	Width         *int              `json:"width"`
	Height        *int              `json:"height"`
	Timestamp     *int64            `json:"timestamp"`
	Duration      *float64          `json:"duration"`
	IdleTimeLimit *float64          `json:"idle_time_limit"`
	Command       *string           `json:"command"`
	Title         *string           `json:"title"`
	Env           map[string]string `json:"env"`
	Theme         json.RawMessage   `json:"theme"`
}

// ReadRecording reads an asciicast v2 recording strictly: the header must
// be a JSON object with version 2, a positive width and height and no keys
// outside asciicast v2; every further line must be a valid UTF-8 JSON array
// [time, code, data] with a non-negative time no earlier than the previous
// event's, a code among o, i, r and m, a string data, and "COLSxROWS" data
// for r. A problem is reported as a *RecordingError naming its line.
func ReadRecording(r io.Reader) (Header, []Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxRecordingLine)
	lineNo := 0
	next := func() ([]byte, bool, error) {
		if sc.Scan() {
			lineNo++
			return sc.Bytes(), true, nil
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return nil, false, &RecordingError{Line: lineNo + 1, Reason: fmt.Sprintf("line longer than %d bytes", maxRecordingLine)}
			}
			return nil, false, fmt.Errorf("read recording line %d: %w", lineNo+1, err)
		}
		return nil, false, nil
	}

	line, ok, err := next()
	if err != nil {
		return Header{}, nil, err
	}
	if !ok {
		return Header{}, nil, &RecordingError{Line: 1, Reason: "empty recording (want a header line)"}
	}
	h, err := parseHeader(line)
	if err != nil {
		return Header{}, nil, &RecordingError{Line: 1, Reason: err.Error()}
	}

	var events []Event
	last := 0.0
	for {
		line, ok, err := next()
		if err != nil {
			return Header{}, nil, err
		}
		if !ok {
			return h, events, nil
		}
		ev, err := parseEvent(line)
		if err != nil {
			return Header{}, nil, &RecordingError{Line: lineNo, Reason: err.Error()}
		}
		if ev.Time < last {
			return Header{}, nil, &RecordingError{Line: lineNo, Reason: fmt.Sprintf("time %v is before the previous event's %v (want non-decreasing times)", ev.Time, last)}
		}
		last = ev.Time
		events = append(events, ev)
	}
}

func parseHeader(line []byte) (Header, error) {
	if !utf8.Valid(line) {
		return Header{}, errors.New("header is not valid UTF-8")
	}
	var f headerFields
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Header{}, fmt.Errorf("header is not an asciicast v2 JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Header{}, errors.New("header has data after its JSON object")
	}
	var problems []string
	switch {
	case f.Version == nil:
		problems = append(problems, "version is missing (want 2)")
	case *f.Version != 2:
		problems = append(problems, fmt.Sprintf("version %d is not supported (want 2)", *f.Version))
	}
	if f.Width == nil || *f.Width <= 0 {
		problems = append(problems, "width is missing or not positive")
	}
	if f.Height == nil || *f.Height <= 0 {
		problems = append(problems, "height is missing or not positive")
	}
	if len(problems) > 0 {
		return Header{}, errors.New(strings.Join(problems, "; "))
	}
	h := Header{Version: *f.Version, Width: *f.Width, Height: *f.Height, Env: f.Env}
	if f.Timestamp != nil {
		h.Timestamp = *f.Timestamp
	}
	if f.Command != nil {
		h.Command = *f.Command
	}
	return h, nil
}

func parseEvent(line []byte) (Event, error) {
	if !utf8.Valid(line) {
		return Event{}, errors.New("event is not valid UTF-8")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(line, &parts); err != nil || parts == nil {
		return Event{}, errors.New("event is not a JSON array (want [time, code, data])")
	}
	if len(parts) != 3 {
		return Event{}, fmt.Errorf("event has %d elements (want 3: [time, code, data])", len(parts))
	}
	var ev Event
	if isNull(parts[0]) || json.Unmarshal(parts[0], &ev.Time) != nil {
		return Event{}, fmt.Errorf("event time %s is not a number", parts[0])
	}
	if ev.Time < 0 || math.IsInf(ev.Time, 0) {
		return Event{}, fmt.Errorf("event time %v is negative", ev.Time)
	}
	if isNull(parts[1]) || json.Unmarshal(parts[1], &ev.Code) != nil {
		return Event{}, fmt.Errorf("event code %s is not a string", parts[1])
	}
	switch ev.Code {
	case CodeOutput, CodeInput, CodeResize, CodeMarker:
	default:
		return Event{}, fmt.Errorf("unknown event code %q (want one of: o, i, r, m)", ev.Code)
	}
	if isNull(parts[2]) || json.Unmarshal(parts[2], &ev.Data) != nil {
		return Event{}, fmt.Errorf("event data %.40s is not a string", parts[2])
	}
	if ev.Code == CodeResize {
		if _, _, ok := parseSize(ev.Data); !ok {
			return Event{}, fmt.Errorf("resize data %q is not COLSxROWS with positive numbers", ev.Data)
		}
	}
	return ev, nil
}

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// parseSize parses resize data "COLSxROWS".
func parseSize(s string) (cols, rows uint16, ok bool) {
	c, r, found := strings.Cut(s, "x")
	if !found {
		return 0, 0, false
	}
	cv, err1 := strconv.ParseUint(c, 10, 16)
	rv, err2 := strconv.ParseUint(r, 10, 16)
	if err1 != nil || err2 != nil || cv == 0 || rv == 0 {
		return 0, 0, false
	}
	return uint16(cv), uint16(rv), true
}
