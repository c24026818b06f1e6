package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	out := mustRun(t, t.TempDir(), "--version")
	if !strings.HasPrefix(out, "agentjournal ") {
		t.Errorf("--version printed %q, want it to start with agentjournal and its version", out)
	}
	for _, m := range []string{"github.com/nats-io/nats-server/v2", "go.etcd.io/bbolt"} {
		if !regexp.MustCompile(regexp.QuoteMeta(m) + ` v\d+\.\d+\.\d+`).MatchString(out) {
			t.Errorf("--version printed %q, want the version of %s", out, m)
		}
	}
}
