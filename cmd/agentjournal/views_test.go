package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/projections"
)

func TestLsShowTimeline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := demoID(t, dir, "views-a")
	b := demoID(t, dir, "views-b")

	var sums []projections.Summary
	for _, line := range strings.Split(strings.TrimSpace(mustRun(t, dir, "ls", "--json")), "\n") {
		var s projections.Summary
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("ls --json line %q: %v", line, err)
		}
		sums = append(sums, s)
	}
	if len(sums) != 2 {
		t.Fatalf("ls lists %d executions, want 2", len(sums))
	}
	for _, s := range sums {
		if s.ID != a && s.ID != b || s.Lifecycle != "completed" {
			t.Fatalf("summary %+v, want a completed demo execution", s)
		}
	}
	if out := mustRun(t, dir, "ls", "--lifecycle", "running"); !strings.Contains(out, "No executions match") {
		t.Fatalf("ls --lifecycle running: %q, want no match", out)
	}
	if r := run(t, dir, "ls", "--lifecycle", "awaiting-input"); r.code != 2 || !strings.Contains(r.stderr, "running") {
		t.Fatalf("ls with a bad lifecycle: exit %d, %q; want 2 naming the accepted values", r.code, r.stderr)
	}
	if out := mustRun(t, dir, "ls"); !strings.Contains(out, a) || !strings.Contains(out, "LIFECYCLE") {
		t.Fatalf("ls: %q", out)
	}

	var st execution.State
	if err := json.Unmarshal([]byte(mustRun(t, dir, "show", a, "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.ID != a || st.Lifecycle != "completed" || len(st.Timeline) == 0 || len(st.ProcessedObservations) == 0 {
		t.Fatalf("show --json: id %s lifecycle %s, %d items, %d observations", st.ID, st.Lifecycle, len(st.Timeline), len(st.ProcessedObservations))
	}
	if r := run(t, dir, "show", "nope"); r.code != 1 || !strings.Contains(r.stderr, "no agent execution") {
		t.Fatalf("show nope: exit %d %q", r.code, r.stderr)
	}

	// Page the timeline three items at a time; the pages together are the
	// replayed timeline, newest first, with --all; without it, the items
	// that are not quiet.
	var replayed struct {
		State execution.State `json:"state"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, dir, "replay", a, "--json")), &replayed); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{true, false} {
		var got []uint64
		before := uint64(0)
		for pages := 0; ; pages++ {
			var page struct {
				Items []execution.TimelineItem `json:"items"`
				Next  uint64                   `json:"next"`
			}
			args := []string{"timeline", a, "--limit", "3", "--before", fmt.Sprint(before), "--json"}
			if all {
				args = append(args, "--all")
			}
			if err := json.Unmarshal([]byte(mustRun(t, dir, args...)), &page); err != nil {
				t.Fatal(err)
			}
			for _, it := range page.Items {
				got = append(got, it.Sequence)
			}
			if page.Next == 0 || pages > 100 {
				break
			}
			before = page.Next
		}
		var want []uint64
		for i := len(replayed.State.Timeline) - 1; i >= 0; i-- {
			if it := replayed.State.Timeline[i]; all || !it.Quiet() {
				want = append(want, it.Sequence)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("timeline pages (all %v), newest first: sequences (-want +got):\n%s", all, diff)
		}
		if !all && len(want) == len(replayed.State.Timeline) {
			t.Fatal("the fixture's timeline has no quiet item")
		}
	}
	if out := mustRun(t, dir, "timeline", a, "--limit", "2"); !strings.Contains(out, "--before") {
		t.Fatalf("a first page without the next cursor hint: %q", out)
	}
}

func TestRebuildAndDamagedProjection(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := demoID(t, dir, "rebuild")
	before := mustRun(t, dir, "show", a, "--json")

	r := run(t, dir, "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, "Rebuilt") || !strings.Contains(r.stdout, "1 executions") {
		t.Fatalf("rebuild: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if after := mustRun(t, dir, "show", a, "--json"); after != before {
		t.Fatalf("state after rebuild differs:\n%s\n%s", before, after)
	}

	// Damage the projection file: the next command says so, rebuilds, and
	// serves the same state.
	path := daemon.Layout{Dir: dir}.Projections()
	if err := os.WriteFile(path, []byte("this is not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, "show", a, "--json")
	if r.code != 0 || !strings.Contains(r.stderr, "damaged") {
		t.Fatalf("show on a damaged projection: exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != before {
		t.Fatalf("state after the damaged file was rebuilt differs")
	}
	aside, _ := filepath.Glob(path + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the damaged file was not kept aside: %v", aside)
	}
}
