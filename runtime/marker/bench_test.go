package marker

import (
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// BenchmarkMarkerParse measures Parse on the three kinds of line a runtime
// sees: markers with the launch's nonce, forged markers and ordinary output.
func BenchmarkMarkerParse(b *testing.B) {
	signal, err := Format(nonce, eventstore.NewSignal(&eventstore.ProgressSignal{
		Summary: "Running the test suite", Detail: "3 of 10 packages pass so far",
		Units: &eventstore.Units{Completed: i64(3), Total: i64(10), Unit: "packages"},
	}))
	if err != nil {
		b.Fatal(err)
	}
	lines := map[string][]byte{
		"signal":      signal,
		"wrong-nonce": append([]byte(Prefix+otherNonce), signal[len(Prefix)+NonceLength:]...),
		"not-marker":  []byte("ok  \tgithub.com/agentjournal/agentjournal/runtime/marker\t0.012s\tcoverage: 91.3% of statements\n"),
	}
	for _, name := range []string{"signal", "wrong-nonce", "not-marker"} {
		line := lines[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if p := Parse(line, nonce); p.Result.String() != name {
					b.Fatalf("Parse = %v, want %s", p.Result, name)
				}
			}
		})
	}
}
