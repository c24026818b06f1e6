package main

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDaemonLinksNoBenchmark: the daemon binary links neither the benchmark
// harnesses nor the SQLite driver the store suite races as a yardstick;
// they belong to cmd/agentjournal-bench.
func TestDaemonLinksNoBenchmark(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", ".").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps .: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	// A list without the daemon's own store would pass whatever it lacked.
	if !slices.Contains(deps, module+"/eventstore") {
		t.Fatalf("go list -deps . does not list %s/eventstore; the list is not the daemon's:\n%s", module, out)
	}
	var linked []string
	for _, p := range deps {
		if forbiddenInDaemon(p) {
			linked = append(linked, p)
		}
	}
	if len(linked) > 0 {
		t.Errorf("the daemon links %d benchmark package(s), which belong to cmd/agentjournal-bench: %s",
			len(linked), strings.Join(linked, ", "))
	}
}

// module is this module's path.
const module = "github.com/agentjournal/agentjournal"

// forbiddenInDaemon says whether the daemon must not link the package p:
// the SQLite driver and what it brings (modernc.org/...), and this
// module's benchmark harnesses (storebench, projbench, apibench,
// fleetbench, benchkit and its benchtest).
func forbiddenInDaemon(p string) bool {
	if strings.HasPrefix(p, "modernc.org/") {
		return true
	}
	rest, ok := strings.CutPrefix(p, module+"/")
	if !ok {
		return false
	}
	for elem := range strings.SplitSeq(rest, "/") {
		if strings.HasSuffix(elem, "bench") || strings.HasPrefix(elem, "bench") {
			return true
		}
	}
	return false
}

func TestForbiddenInDaemon(t *testing.T) {
	for p, want := range map[string]bool{
		"modernc.org/sqlite":                    true,
		"modernc.org/libc":                      true,
		module + "/eventstore/storebench":       true,
		module + "/projections/projbench":       true,
		module + "/api/apibench":                true,
		module + "/policy/fleetbench":           true,
		module + "/internal/benchkit":           true,
		module + "/internal/benchkit/benchtest": true,
		module + "/eventstore":                  false,
		module + "/api":                         false,
		"go.etcd.io/bbolt":                      false,
		"github.com/blevesearch/bleve/v2":       false,
	} {
		if got := forbiddenInDaemon(p); got != want {
			t.Errorf("forbiddenInDaemon(%q) = %t, want %t", p, got, want)
		}
	}
}
