package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/execution/marker"
	"github.com/agentjournal/agentjournal/terminal"
)

// displayFilter takes a terminal lane's output, in order and in chunks of
// any size, and returns what may be shown of it. Marker lines are left out
// whole: their signals are in the journal, and they carry the run's nonce,
// which output shown to people must not. From a marker prefix inside a
// line (after a \r or an escape sequence, say, where it is no marker but
// may still hold the nonce) to the end of that line is left out too; the
// line's end is kept. A tail that may begin a prefix is held back until
// the next chunk tells; it never holds a nonce, so Flush may show it.
type displayFilter struct {
	lineStart bool   // the next byte starts a line
	hiding    bool   // inside a marker, until the end of its line
	whole     bool   // the marker being hidden started its line
	cr        bool   // the last byte hidden was \r
	held      string // a tail that may be the start of a marker prefix
}

func newDisplayFilter() *displayFilter { return &displayFilter{lineStart: true} }

// Write returns what may be shown of the next chunk of output.
func (f *displayFilter) Write(chunk string) string {
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
		if j := strings.Index(s, marker.Prefix); j >= 0 {
			out.WriteString(s[:j])
			f.whole = (j == 0 && f.lineStart) || (j > 0 && s[j-1] == '\n')
			f.hiding, f.cr = true, false
			s = s[j+len(marker.Prefix):]
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
func (f *displayFilter) Flush() string {
	s := f.held
	f.held = ""
	return s
}

// prefixTail returns the length of the longest end of s that is a proper
// start of the marker prefix.
func prefixTail(s string) int {
	for n := min(len(s), len(marker.Prefix)-1); n > 0; n-- {
		if s[len(s)-n:] == marker.Prefix[:n] {
			return n
		}
	}
	return 0
}

// displayRecent is what may be shown of a lane's recent output
// (terminal.Snapshot.Recent). Once the ring that keeps it is full, its
// first line may be the end of a marker, the prefix overwritten: that line
// is left out. The runtime opens lanes with the default ring size. A tail
// that may begin a marker is left for the next snapshot to show.
func displayRecent(recent string) string {
	if len(recent) > terminal.DefaultScrollbackBytes-utf8.UTFMax {
		i := strings.IndexByte(recent, '\n')
		if i < 0 {
			return ""
		}
		recent = recent[i+1:]
	}
	return newDisplayFilter().Write(recent)
}

// writeDisplayRecording copies an asciicast v2 recording with the data of
// its output events filtered as displayFilter does; an output event left
// empty is dropped, and every other line is copied as it is. A last line
// the runtime has not finished writing is left out.
func writeDisplayRecording(w io.Writer, r io.Reader) error {
	in := bufio.NewReaderSize(r, 64<<10)
	out := bufio.NewWriterSize(w, 64<<10)
	f := newDisplayFilter()
	var last json.RawMessage // the time of the last event
	first := true
	for {
		line, err := in.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if first {
			first = false
			out.Write(line)
			continue
		}
		var ev []json.RawMessage
		var code, data string
		if json.Unmarshal(line, &ev) == nil && len(ev) == 3 {
			last = ev[0]
		}
		if len(ev) != 3 || json.Unmarshal(ev[1], &code) != nil || code != terminal.CodeOutput || json.Unmarshal(ev[2], &data) != nil {
			out.Write(line)
			continue
		}
		if shown := f.Write(data); shown != "" {
			writeOutputEvent(out, ev[0], shown)
		}
	}
	if rest := f.Flush(); rest != "" && last != nil {
		writeOutputEvent(out, last, rest)
	}
	return out.Flush()
}

// writeOutputEvent writes an output event in the recorder's layout.
func writeOutputEvent(w *bufio.Writer, at json.RawMessage, data string) {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	e.Encode(data) // a string always encodes
	w.WriteByte('[')
	w.Write(bytes.TrimSpace(at))
	w.WriteString(`, "o", `)
	w.Write(bytes.TrimSpace(enc.Bytes()))
	w.WriteString("]\n")
}
