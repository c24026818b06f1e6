package execution

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the attention table in docs/architecture.md")

// The attention table in docs/architecture.md sits between these lines.
const (
	attentionDocPath  = "../docs/architecture.md"
	attentionDocStart = "<!-- The attention table, generated from execution/attention.go (go test ./execution -run TestAttentionDoc -update). -->\n"
	attentionDocEnd   = "<!-- End of the attention table. -->\n"
)

// TestAttentionDoc keeps the table in the docs equal to the one the policy
// and replay decide by.
func TestAttentionDoc(t *testing.T) {
	doc, err := os.ReadFile(attentionDocPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, attentionDocStart)
	end := strings.Index(text, attentionDocEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no attention table between %q and %q", attentionDocPath, attentionDocStart, attentionDocEnd)
	}
	start += len(attentionDocStart)
	want := "\n" + attentionTable() + "\n"
	if *update {
		text = text[:start] + want + text[end:]
		if err := os.WriteFile(attentionDocPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(want, text[start:end]); diff != "" {
		t.Fatalf("the attention table in %s is stale; run go test ./execution -run TestAttentionDoc -update (-code +doc):\n%s", attentionDocPath, diff)
	}
}
