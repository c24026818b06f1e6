package acpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/internal/strictjson"
)

// screened runs screen over in and returns the lines it passed on and the
// answers it wrote.
func screened(t *testing.T, in string) (passed []string, answers []map[string]any) {
	t.Helper()
	pr, pw := io.Pipe()
	var out bytes.Buffer
	go screen(strings.NewReader(in), pw, &out)
	b, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		passed = append(passed, strings.TrimSuffix(line, "\n"))
	}
	for line := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("answer %q: %v", line, err)
		}
		answers = append(answers, m)
	}
	return passed, answers
}

// TestScreenRefusesDuplicateKeys: a message with a key twice in one object
// is answered with -32600 naming the key and where it is, with the
// request's id when the id is not the key given twice, and is not passed
// on; a message with each key once is.
func TestScreenRefusesDuplicateKeys(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		id         any
		says       string
	}{
		{"method twice", `{"jsonrpc":"2.0","id":7,"method":"session/list","method":"session/new","params":{}}`,
			7.0, `key "method" appears more than once in the message`},
		{"in params", `{"jsonrpc":"2.0","id":"a","method":"session/new","params":{"cwd":"/a","cwd":"/b","mcpServers":[]}}`,
			"a", `key "cwd" appears more than once in the object at params`},
		{"in an array's object", `{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"a","text":"b"}]}}`,
			8.0, `the object at params.prompt[0]`},
		{"an escaped twin", `{"jsonrpc":"2.0","id":9,"method":"session/cancel","params":{"sessionId":"a","session\u0049d":"b"}}`,
			9.0, `key "sessionId"`},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"initialize","params":{}}`,
			nil, `key "id" appears more than once in the message`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			passed, answers := screened(t, tt.line+"\n")
			if len(passed) != 0 {
				t.Errorf("passed on %q, want nothing", passed)
			}
			if len(answers) != 1 {
				t.Fatalf("got %d answers, want 1", len(answers))
			}
			a := answers[0]
			e, _ := a["error"].(map[string]any)
			if e == nil || e["code"] != -32600.0 {
				t.Fatalf("answer %v, want error -32600", a)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, tt.says) || !strings.Contains(msg, "want each key once") {
				t.Errorf("message %q, want it to say %q and what is accepted", msg, tt.says)
			}
			if a["id"] != tt.id {
				t.Errorf("id %v, want %v", a["id"], tt.id)
			}
		})
	}
	ok := `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/a","mcpServers":[],"_meta":{"cwd":"same key, another object"}}}`
	passed, answers := screened(t, ok+"\n")
	if len(passed) != 1 || passed[0] != ok || len(answers) != 0 {
		t.Errorf("passed %q and answered %v, want the line passed on and no answer", passed, answers)
	}
}

// FuzzScreenLine: whatever a line holds, it is either passed on whole (a
// JSON object with each key once) or answered with exactly one JSON-RPC
// error, never both.
func FuzzScreenLine(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	f.Add(`{"id":1,"id":2}`)
	f.Add(`{"a":{"b":1,"b":2}}`)
	f.Add(`[1,2]`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") || strings.TrimSpace(line) == "" {
			return
		}
		var dst, out bytes.Buffer
		if err := screenLine([]byte(line), &dst, &out); err != nil {
			t.Fatal(err)
		}
		switch {
		case dst.Len() > 0 && out.Len() > 0:
			t.Fatalf("%q was passed on and answered", line)
		case dst.Len() > 0:
			if dst.String() != line+"\n" {
				t.Fatalf("passed on %q, want %q", dst.String(), line+"\n")
			}
			if err := strictjson.Check([]byte(line), strictjson.Checks{Duplicates: true}); errors.Is(err, strictjson.ErrDuplicateKey) {
				t.Fatalf("%q with a key twice was passed on", line)
			}
		default:
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(out.Bytes(), &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Message == "" {
				t.Fatalf("%q answered %q, want one JSON-RPC error", line, out.String())
			}
		}
	})
}
