package projections

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The package doc gives the file layout's format version, and must give
// the one the code writes.
func TestDocFormatVersion(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("(format version %d)", formatVersion), fmt.Sprintf(`"format" -> %d,`, formatVersion)} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("doc.go does not say %s: the layout it describes is not the one written", want)
		}
	}
}
