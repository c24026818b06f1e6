package eventstore

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestReferenceDoc(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	const path = "../docs/records.md"
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./eventstore -run TestReferenceDoc -update)", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Fatalf("docs/records.md is stale; run go test ./eventstore -run TestReferenceDoc -update (-file +registry):\n%s", diff)
	}
}
