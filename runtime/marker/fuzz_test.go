package marker

import (
	"bytes"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// FuzzParse: Parse never panics; a Signal result always carries a valid,
// surfaced signal and only ever for a line with the right nonce; every
// marker becomes a valid observation.
func FuzzParse(f *testing.F) {
	for _, p := range surfaced {
		line, err := Format(nonce, eventstore.NewSignal(p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	for _, s := range []string{
		"", "hello", Prefix, Prefix + nonce, Prefix + nonce + " ", Prefix + otherNonce + ` {"type":"progress","payload":{"summary":"x"}}`,
		Prefix + nonce + ` {"type":"usage","payload":{"totalTokens":1}}`,
		Prefix + nonce + ` {"type":"needs_input","payload":{"requestId":"","question":"q"}}`,
		Prefix + nonce + ` {"type":"progress","payload":{"summary":"x","units":{"completed":1e400}}}`,
		Prefix + nonce + " {\"type\":\"message\",\"payload\":{\"text\":\"\xff\"}}\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p := Parse(line, nonce)
		switch p.Result {
		case Signal:
			if p.Signal == nil || p.Err != nil {
				t.Fatalf("signal result with signal %v, err %v", p.Signal, p.Err)
			}
			if err := check(p.Signal); err != nil {
				t.Fatalf("accepted an invalid signal: %v", err)
			}
			if !bytes.HasPrefix(line, []byte(Prefix+nonce+" ")) {
				t.Fatalf("accepted %q without the nonce", line)
			}
			if q := Parse(line, otherNonce); q.Result == Signal {
				t.Fatalf("accepted %q with another nonce", line)
			}
			if q := Parse(line, ""); q.Result == Signal {
				t.Fatalf("accepted %q with no nonce expected", line)
			}
		case Malformed:
			if p.Signal != nil || p.Err == nil {
				t.Fatalf("malformed result with signal %v, err %v", p.Signal, p.Err)
			}
		case WrongNonce, NotMarker:
			if p.Signal != nil || p.Err != nil {
				t.Fatalf("%v result with signal %v, err %v", p.Result, p.Signal, p.Err)
			}
		default:
			t.Fatalf("result %v", p.Result)
		}
		o := Observation(p, line, "obs-1", eventstore.ObservedPTY)
		if p.Result == NotMarker {
			if o != nil {
				t.Fatalf("observation for an ordinary line")
			}
			return
		}
		checkObservation(t, o)
		if p.Result == Malformed && bytes.HasPrefix(line, []byte(Prefix+nonce)) && bytes.Contains([]byte(o.RawText), []byte(nonce)) {
			t.Fatalf("rawText %q holds the nonce", o.RawText)
		}
	})
}
