package marker

import (
	"os"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// The package doc names every signal type a marker may carry, with an
// example line of each: a signal added to the registry fails here until
// the doc shows it.
func TestDocShowsEverySurfacedSignal(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, st := range eventstore.SurfacedSignalTypes() {
		if !strings.Contains(text, `{"type":"`+string(st)+`"`) {
			t.Errorf("doc.go has no example marker of signal type %q", st)
		}
		if !strings.Contains(text, string(st)) {
			t.Errorf("doc.go does not name signal type %q", st)
		}
	}
}
