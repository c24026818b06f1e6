package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
)

func TestGraphAndLineageCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	s := fixtures.OpenStore(t, b)
	eventAt := func(ref eventstore.Reference, seq uint64) string { return fixtures.EventIDAt(t, s, ref, seq) }
	journal := func(id string, parent *eventstore.Reference, seq uint64, n int) eventstore.Reference {
		ref := storetest.Ref(eventstore.OwnerTask, "t", id)
		h := storetest.Header("a")
		if parent != nil {
			h.ForkedFrom = &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: parent.AgentExecutionID, Sequence: seq, EventID: eventAt(*parent, seq)}
		}
		if _, err := s.EnsureJournal(ctx, ref, h); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := s.Append(ctx, ref, storetest.Message(fmt.Sprintf("%s-%d", id, i), "x")); err != nil {
				t.Fatal(err)
			}
		}
		return ref
	}
	root := journal("cli-root", nil, 0, 3)
	f1 := journal("cli-f1", &root, 2, 2)
	journal("cli-f2", &f1, 3, 1)
	journal("cli-f1b", &root, 4, 0)

	nats := []string{"--nats-url", b.ClientURL(), "--nats-secret-file", natsSecretFile(t)}
	cli := func(args ...string) result {
		t.Helper()
		return run(t, t.TempDir(), append(nats, args...)...)
	}

	r := cli("graph", "export", "--format", "dot")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "digraph agentjournal {\n") || !strings.HasSuffix(r.stdout, "}\n") ||
		!strings.Contains(r.stdout, `"run:cli-f2" -> "`+eventAt(f1, 3)+`" [label="FORKED_FROM"];`) {
		t.Errorf("graph export --format dot: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	r = cli("graph", "export", "cli-f1")
	var g struct {
		Nodes []struct {
			ID       string
			External bool
		}
		Edges []struct{ Kind string }
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &g) != nil {
		t.Fatalf("graph export cli-f1: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	external := 0
	for _, n := range g.Nodes {
		if n.External {
			external++
		}
	}
	if external != 2 { // root's run and the record f1 branches after
		t.Errorf("graph export cli-f1: %d external nodes, want 2:\n%s", external, r.stdout)
	}

	r = cli("lineage", "cli-f1", "--history")
	for _, want := range []string{
		"ancestors:\n  cli-root  fork after sequence 2 (" + eventAt(root, 2) + ")",
		"tree (* marks cli-f1):\n  cli-root\n    cli-f1  fork after 2  *\n      cli-f2  fork after 3\n    cli-f1b  fork after 4\n",
		"  cli-root/2  message.accepted       " + eventAt(root, 2) + "  inherited\n",
		"  cli-f1/3  message.accepted       " + eventAt(f1, 3) + "\n",
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("lineage --history lacks %q: exit %d %s\n%s", want, r.code, r.stderr, r.stdout)
		}
	}
	r = cli("lineage", "--event", eventAt(root, 2), "cli-f2")
	if r.code != 0 || !strings.Contains(r.stdout, "first written in cli-root at sequence 2 (message.accepted") {
		t.Errorf("lineage --event: exit %d %s\n%s", r.code, r.stderr, r.stdout)
	}
	r = cli("lineage", "nope")
	if r.code == 0 || !strings.Contains(r.stderr, `no execution "nope"`) || !strings.Contains(r.stderr, "journal ls") {
		t.Errorf("lineage of an unknown execution: exit %d, stderr %s", r.code, r.stderr)
	}
	r = cli("lineage", "--event", "sha256:"+strings.Repeat("0", 64))
	if r.code == 0 || !strings.Contains(r.stderr, "no record of any journal") {
		t.Errorf("lineage --event of an unknown record: exit %d, stderr %s", r.code, r.stderr)
	}
}
