package acpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/internal/strictjson"
)

// maxLine bounds one JSON-RPC message, as the ACP library does: a longer
// line would end its reader, and the connection with it.
const maxLine = 10 << 20

// lockedWriter serializes whole messages: the library's and the errors
// this package answers for lines the library drops.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// screen copies the lines of in that are JSON objects to dst, and answers
// any other line on out with the JSON-RPC error the library would not
// send (it logs and drops them, leaving the client waiting): -32700 for a
// line that is not JSON, -32600 for JSON that is not a request object or
// a line over maxLine, with id null since none can be read, and -32600
// for an object with a key twice in one object, with the request's id
// when it can be read. It closes dst when in ends.
func screen(in io.Reader, dst *io.PipeWriter, out io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if werr := screenLine(line, dst, out); werr != nil {
				dst.CloseWithError(werr)
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			dst.CloseWithError(err)
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line, without its line feed. A line over maxLine is
// read to its end and returned empty with errLineTooLong as its content's
// stand-in.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) <= maxLine+1 {
			line = append(line, chunk...)
		} else {
			line = []byte(errLineTooLong.Error())
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

func screenLine(line []byte, dst io.Writer, out io.Writer) error {
	switch {
	case string(line) == errLineTooLong.Error():
		return rpcError(out, nil, -32600, fmt.Sprintf("Invalid request: a message over %d MiB", maxLine>>20))
	case !json.Valid(line):
		return rpcError(out, nil, -32700, "Parse error: the line is not JSON (want one JSON-RPC 2.0 object per line)")
	case line[bytes.IndexFunc(line, func(r rune) bool { return r != ' ' && r != '\t' })] != '{':
		return rpcError(out, nil, -32600, "Invalid request: want a JSON-RPC 2.0 object")
	}
	// A key twice in one object: the library's decoder keeps the last
	// value, another reader of the same line may keep the first, so the
	// editor and the journal could disagree on what was asked. json.Valid
	// above bounds the nesting the walk recurses through.
	var dup *strictjson.DuplicateKeyError
	if errors.As(strictjson.Check(line, strictjson.Checks{Duplicates: true}), &dup) {
		return rpcError(out, requestID(line, dup), -32600,
			fmt.Sprintf("Invalid request: key %q appears more than once in %s (want each key once)", dup.Key, objectAt(dup.Path)))
	}
	_, err := dst.Write(append(line, '\n'))
	return err
}

// requestID is the id of the request on line, for an error's answer to
// reach the caller waiting for it; nil (null) when the id is itself the
// key given twice or cannot be read.
func requestID(line []byte, dup *strictjson.DuplicateKeyError) json.RawMessage {
	if len(dup.Path) == 0 && dup.Key == "id" {
		return nil
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return m.ID
}

// objectAt names the object at path: the message itself, or a member as
// params.prompt[0].
func objectAt(path []string) string {
	if len(path) == 0 {
		return "the message"
	}
	var b strings.Builder
	b.WriteString("the object at ")
	for i, seg := range path {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}

// rpcError answers id (nil for null) with a JSON-RPC error.
func rpcError(out io.Writer, id json.RawMessage, code int, msg string) error {
	var idv any
	if id != nil {
		idv = id
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": idv, "error": map[string]any{"code": code, "message": msg}})
	_, err := out.Write(append(b, '\n'))
	return err
}
