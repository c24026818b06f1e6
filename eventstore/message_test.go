package eventstore_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestMessagePayloadAccessors(t *testing.T) {
	const bad = "error" // an error other than ErrNoText
	cases := []struct {
		name, payload string
		// text and textErr are what Text returns: textErr is "", bad or
		// "no text".
		text, textErr string
		request       string
		requestErr    bool
		decoded       eventstore.MessagePayload
		decodeErr     bool
	}{
		{name: "prompt", payload: `{"text":"fix the test"}`, text: "fix the test",
			decoded: eventstore.MessagePayload{Text: "fix the test"}},
		{name: "answer", payload: `{"requestId":"req-1","text":"main"}`, text: "main", request: "req-1",
			decoded: eventstore.MessagePayload{Text: "main", RequestID: "req-1"}},
		{name: "empty text", payload: `{"text":""}`, text: ""},
		{name: "no text", payload: `{"hard":true}`, textErr: "no text"},
		{name: "null text", payload: `{"text":null}`, textErr: "no text"},
		{name: "null payload", payload: `null`, textErr: "no text"},
		{name: "text not a string", payload: `{"text":5,"requestId":"req-1"}`, textErr: bad, request: "req-1", decodeErr: true},
		{name: "requestId not a string", payload: `{"text":"yes","requestId":7}`, text: "yes", requestErr: true, decodeErr: true},
		{name: "a string", payload: `"hello"`, textErr: bad, requestErr: true, decodeErr: true},
		{name: "an array", payload: `["hello"]`, textErr: bad, requestErr: true, decodeErr: true},
		{name: "malformed", payload: `{"text":"x"`, textErr: bad, requestErr: true, decodeErr: true},
		{name: "absent", payload: ``, textErr: bad, requestErr: true, decodeErr: true},
		{name: "invalid UTF-8 read as U+FFFD", payload: "{\"text\":\"a\xffb\"}", text: "a\uFFFDb",
			decoded: eventstore.MessagePayload{Text: "a\uFFFDb"}},
		{name: "keys matched as encoding/json matches them", payload: `{"Text":"x","REQUESTID":"r"}`, text: "x", request: "r",
			decoded: eventstore.MessagePayload{Text: "x", RequestID: "r"}},
		{name: "other keys ignored", payload: `{"text":"x","choices":[1]}`, text: "x",
			decoded: eventstore.MessagePayload{Text: "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &eventstore.MessageAccepted{MessageID: "msg-1", MessageType: "prompt", Payload: json.RawMessage(c.payload)}

			text, err := m.Text()
			switch {
			case c.textErr == "" && err != nil:
				t.Errorf("Text() error %v, want none", err)
			case c.textErr == "no text" && !errors.Is(err, eventstore.ErrNoText):
				t.Errorf("Text() error %v, want ErrNoText", err)
			case c.textErr == bad && (err == nil || errors.Is(err, eventstore.ErrNoText)):
				t.Errorf("Text() error %v, want one saying the payload is malformed", err)
			case text != c.text:
				t.Errorf("Text() = %q, want %q", text, c.text)
			}

			request, err := m.RequestID()
			if (err != nil) != c.requestErr || request != c.request {
				t.Errorf("RequestID() = %q, %v; want %q, error %t", request, err, c.request, c.requestErr)
			}

			p, err := m.DecodePayload()
			if (err != nil) != c.decodeErr || p != c.decoded {
				t.Errorf("DecodePayload() = %+v, %v; want %+v, error %t", p, err, c.decoded, c.decodeErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), `message msg-1: payload is not {"text": …}: `) {
				t.Errorf("DecodePayload() error %q, want it to name the message and the shape", err)
			}
		})
	}
}

// TestMessagePayloadErrorWording: a delivery that fails on its payload
// records DecodePayload's error as its reason, worded as before.
func TestMessagePayloadErrorWording(t *testing.T) {
	m := &eventstore.MessageAccepted{MessageID: "msg-7", Payload: json.RawMessage(`{"text":5}`)}
	_, err := m.DecodePayload()
	want := `message msg-7: payload is not {"text": …}: json: cannot unmarshal number into Go struct field messagePayload.text of type string`
	if err == nil || err.Error() != want {
		t.Fatalf("DecodePayload() error %v, want %s", err, want)
	}
}

// TestMessagePayloadEncodes: the payload the writers encode is the one the
// accessors read.
func TestMessagePayloadEncodes(t *testing.T) {
	data, err := json.Marshal(eventstore.MessagePayload{Text: "main", RequestID: "req-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"text":"main","requestId":"req-1"}`; got != want {
		t.Errorf("encoded %s, want %s", got, want)
	}
	m := &eventstore.MessageAccepted{Payload: data}
	if p, err := m.DecodePayload(); err != nil || p != (eventstore.MessagePayload{Text: "main", RequestID: "req-1"}) {
		t.Errorf("DecodePayload() = %+v, %v", p, err)
	}
	if data, _ := json.Marshal(eventstore.MessagePayload{Text: "go"}); string(data) != `{"text":"go"}` {
		t.Errorf("a prompt encodes as %s, want no requestId", data)
	}
}
