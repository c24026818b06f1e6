package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/search"
)

// searchHits runs search QUERY --json until it prints want hits, and
// returns them.
func searchHits(t *testing.T, dir string, want int, args ...string) []search.Hit {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := run(t, dir, append([]string{"search"}, args...)...)
		var hits []search.Hit
		if r.code == exitOK {
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				var h search.Hit
				if line != "" && json.Unmarshal([]byte(line), &h) == nil {
					hits = append(hits, h)
				}
			}
		}
		if len(hits) == want {
			return hits
		}
		if time.Now().After(deadline) {
			t.Fatalf("search %v: exit %d, %d hits, want %d\n%s\n%s", args, r.code, len(hits), want, r.stdout, r.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The daemon indexes the log, catches up after a restart without doubling
// a document, and rebuild leaves the same hits.
func TestSearchThroughTheDaemon(t *testing.T) {
	dir := t.TempDir()
	// Written before any daemon: the first one catches up with it.
	id := demoID(t, dir, "search")
	_, stop := startServeStop(t, dir)
	hits := searchHits(t, dir, 2, `"expired session"`, "--json")
	for _, h := range hits {
		if h.Execution != id || !strings.Contains(h.Snippet, "<mark>") {
			t.Errorf("hit %+v: want execution %s and a marked snippet", h, id)
		}
	}
	searchHits(t, dir, 2, `"expired session"`, "--owner", "Task", "--lifecycle", "completed", "--since", "8760h", "--json")
	searchHits(t, dir, 0, `"expired session"`, "--lifecycle", "running", "--json")

	r := run(t, dir, "search", "expired", "session")
	if r.code != exitOK || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "[expired]") {
		t.Errorf("search in text: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range [][]string{{"search"}, {"search", `"unclosed`}, {"search", "x", "--lifecycle", "sleeping"}, {"search", "x", "--since", "yesterday"}} {
		if r := run(t, dir, bad...); r.code != exitUsage || r.stderr == "" {
			t.Errorf("%v: exit %d, want %d with a message\n%s", bad, r.code, exitUsage, r.stderr)
		}
	}
	stop()

	// A second journal while no daemon runs, then a restart.
	demoID(t, dir, "search-2")
	_, stop = startServeStop(t, dir)
	after := searchHits(t, dir, 4, `"expired session"`, "--json")
	if r := run(t, dir, "rebuild"); r.code != exitOK {
		t.Fatalf("rebuild: exit %d\n%s", r.code, r.stderr)
	}
	rebuilt := searchHits(t, dir, 4, `"expired session"`, "--json")
	key := func(hs []search.Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, fmt.Sprintf("%s/%d", h.Execution, h.Sequence))
		}
		slices.Sort(out)
		return out
	}
	if a, b := key(after), key(rebuilt); !slices.Equal(a, b) {
		t.Errorf("hits after rebuild %v, before %v", b, a)
	}
	stop()
}
