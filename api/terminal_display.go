package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/agentjournal/agentjournal/runtime/marker"
	"github.com/agentjournal/agentjournal/terminal"
)

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
	return marker.NewDisplayFilter().Write(recent)
}

// writeDisplayRecording copies an asciicast v2 recording with the data of
// its output events filtered as marker.DisplayFilter does; an output event left
// empty is dropped, and every other line is copied as it is. A last line
// the runtime has not finished writing is left out.
func writeDisplayRecording(w io.Writer, r io.Reader) error {
	in := bufio.NewReaderSize(r, 64<<10)
	out := bufio.NewWriterSize(w, 64<<10)
	f := marker.NewDisplayFilter()
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
