package marker

import (
	"io"
	"strings"
	"sync"
)

// DisplayFilter takes a terminal lane's output, in order and in chunks of
// any size, and returns what may be shown of it. Marker lines are left out
// whole: their signals are in the journal, and they carry the run's nonce,
// which output shown to people must not. From a marker prefix inside a
// line (after a \r or an escape sequence, say, where it is no marker but
// may still hold the nonce) to the end of that line is left out too; the
// line's end is kept. A tail that may begin a prefix is held back until
// the next chunk tells; it never holds a nonce, so Flush may show it.
type DisplayFilter struct {
	lineStart bool   // the next byte starts a line
	hiding    bool   // inside a marker, until the end of its line
	whole     bool   // the marker being hidden started its line
	cr        bool   // the last byte hidden was \r
	held      string // a tail that may be the start of a marker prefix
}

// NewDisplayFilter returns a filter for output that starts a line.
func NewDisplayFilter() *DisplayFilter { return &DisplayFilter{lineStart: true} }

// Write returns what may be shown of the next chunk of output.
func (f *DisplayFilter) Write(chunk string) string {
	s := f.held + chunk
	f.held = ""
	var out strings.Builder
	for s != "" {
		if f.hiding {
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				f.cr = s[len(s)-1] == '\r'
				break
			}
			if !f.whole {
				if (i > 0 && s[i-1] == '\r') || (i == 0 && f.cr) {
					out.WriteByte('\r')
				}
				out.WriteByte('\n')
			}
			f.hiding, f.lineStart, f.cr = false, true, false
			s = s[i+1:]
			continue
		}
		if j := strings.Index(s, Prefix); j >= 0 {
			out.WriteString(s[:j])
			f.whole = (j == 0 && f.lineStart) || (j > 0 && s[j-1] == '\n')
			f.hiding, f.cr = true, false
			s = s[j+len(Prefix):]
			continue
		}
		keep := len(s) - prefixTail(s)
		out.WriteString(s[:keep])
		if keep > 0 {
			f.lineStart = s[keep-1] == '\n'
		}
		f.held = s[keep:]
		break
	}
	return out.String()
}

// Flush returns the tail held back: the output has ended without it
// becoming a marker.
func (f *DisplayFilter) Flush() string {
	s := f.held
	f.held = ""
	return s
}

// prefixTail returns the length of the longest end of s that is a proper
// start of the marker prefix.
func prefixTail(s string) int {
	for n := min(len(s), len(Prefix)-1); n > 0; n-- {
		if s[len(s)-n:] == Prefix[:n] {
			return n
		}
	}
	return 0
}

// DisplayWriter writes to W what a DisplayFilter lets through, for output
// shown to a person as it comes (a terminal that is the agent's).
type DisplayWriter struct {
	W  io.Writer
	mu sync.Mutex
	f  *DisplayFilter
}

// NewDisplayWriter returns a DisplayWriter onto w.
func NewDisplayWriter(w io.Writer) *DisplayWriter {
	return &DisplayWriter{W: w, f: NewDisplayFilter()}
}

// Write filters p and writes what may be shown. It reports p written
// whole: what is left out is left out on purpose.
func (d *DisplayWriter) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if out := d.f.Write(string(p)); out != "" {
		if _, err := io.WriteString(d.W, out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes the tail held back once the output has ended.
func (d *DisplayWriter) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if out := d.f.Flush(); out != "" {
		_, err := io.WriteString(d.W, out)
		return err
	}
	return nil
}
