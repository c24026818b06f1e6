package api

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentjournal/agentjournal/api/wire"
)

// requestBodies are the types the routes decode their JSON bodies into.
var requestBodies = []func() any{
	func() any { return &wire.LaunchRequest{} },
	func() any { return &wire.Message{} },
	func() any { return &observationInput{} },
	func() any { return &wire.ForkRequest{} },
	func() any { return &wire.ResumeRequest{} },
	func() any { return &wire.CommandRequest{} },
	func() any { return &wire.CheckpointRequest{} },
	func() any { return &wire.TerminalAttach{} },
	func() any { return &wire.TerminalInput{} },
	func() any { return &struct{}{} },
}

// FuzzDecodeRequest: whatever a body holds, decoding it into any route's
// request either succeeds or fails with a client error (4xx): never an
// error that would be answered 500 internal, nor a panic.
func FuzzDecodeRequest(f *testing.F) {
	for _, body := range []string{
		``, `{}`, `[]`, `null`, `"s"`, `1e400`, `{"a":1,"a":2}`, `{"ownerEntity":"Task","ownerId":"t","agent":"generic"}`,
		`{"type":"prompt","payload":{"text":"x"}}`, `{"observationId":"o","source":"mcp","confidence":"high","signal":{"type":"progress","payload":{"summary":1}}}`,
		`{"signal":{"type":"nope"}}`, `{"signal":[]}`, `{"at":-1}`, `{"at":18446744073709551616}`, `{"env":{"A":1}}`, `{"confirmImported":{"command":"x"}}`,
		`{"dispatchContext":{"dispatchMode":"x"}}`, `{"cols":70000}`, `{"data":"\u0000"}`, `{` + string(bytes.Repeat([]byte(`"a":[`), 70)),
	} {
		for i := range requestBodies {
			f.Add(uint8(i), []byte(body))
		}
	}
	s := &Server{cfg: Config{MaxBody: 1 << 16}}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		v := requestBodies[int(which)%len(requestBodies)]()
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		err := s.decodeBody(httptest.NewRecorder(), r, v, which%2 == 0)
		if err == nil {
			return
		}
		if ae := toAPIError(err); ae.status < 400 || ae.status >= 500 || ae.message == "" {
			t.Fatalf("decoding %q into %T: %v, answered %d %s; want a 4xx saying what is wrong", body, v, err, ae.status, ae.code)
		}
	})
}
