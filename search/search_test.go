package search_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/search"
)

func startLog(t *testing.T) *eventstore.JetStreamStore {
	t.Helper()
	return fixtures.OpenStore(t, fixtures.StartNATS(t, func(c *bus.Config) { c.Sync = bus.SyncInterval }))
}

func open(t *testing.T, path string) *search.Index {
	t.Helper()
	x, err := search.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func appendAll(t *testing.T, s *eventstore.JetStreamStore, ref eventstore.Reference, rs ...eventstore.Record) {
	t.Helper()
	for _, r := range rs {
		if _, err := s.Append(context.Background(), ref, r); err != nil {
			t.Fatalf("append %s: %v", r.Kind(), err)
		}
	}
}

func observe(id string, p eventstore.SignalPayload) *eventstore.Observation {
	return &eventstore.Observation{ObservationID: id, Source: eventstore.ObservedMCP,
		Confidence: eventstore.ConfidenceAuthoritative, Signal: eventstore.NewSignal(p)}
}

// fill writes two journals with every indexed kind of text.
func fill(t *testing.T, s *eventstore.JetStreamStore) (a, b eventstore.Reference) {
	t.Helper()
	ctx := context.Background()
	a = storetest.Ref(eventstore.OwnerTask, "t-1", "exec-a")
	b = storetest.Ref(eventstore.OwnerMission, "m-1", "exec-b")
	if _, err := s.EnsureJournal(ctx, a, storetest.Header("claude")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EnsureJournal(ctx, b, storetest.Header("codex")); err != nil {
		t.Fatal(err)
	}
	act := storetest.Activity(a.JournalID, 1)
	act.CurrentTarget = &eventstore.Target{Kind: eventstore.TargetFile, Path: "internal/zebra/parser.go"}
	appendAll(t, s, a,
		storetest.Message("m1", "refactor the flamingo parser"),
		observe("o1", &eventstore.NeedsInputSignal{RequestID: "r1", Question: "which database?", Choices: []string{"postgres", "sqlite"}}),
		act,
		observe("o2", &eventstore.PlanSignal{Items: []eventstore.PlanItem{{Text: "write the walrus tests", Status: eventstore.PlanItemOpen}}}),
	)
	appendAll(t, s, b,
		storetest.Message("m1", "deploy the flamingo service"),
		observe("o1", &eventstore.BlockedSignal{Reason: "credentials missing", Needs: "a vault token"}),
		observe("o2", &eventstore.MessageSignal{Text: "the flamingo is ready"}),
	)
	return a, b
}

func hits(t *testing.T, x *search.Index, q search.Query) []string {
	t.Helper()
	res, err := x.Search(q)
	if err != nil {
		t.Fatalf("Search(%+v): %v", q, err)
	}
	out := []string{}
	for _, h := range res.Hits {
		out = append(out, fmt.Sprintf("%s/%d %s", h.Execution, h.Sequence, h.Kind))
	}
	slices.Sort(out)
	return out
}

func TestIndexFollowsTheLog(t *testing.T) {
	s := startLog(t)
	a, _ := fill(t, s)
	x := open(t, filepath.Join(t.TempDir(), "search"))
	defer x.Close()
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    search.Query
		want []string
	}{
		{search.Query{Text: "flamingo"}, []string{"exec-a/2 message.accepted", "exec-b/2 message.accepted", "exec-b/4 observation.recorded"}},
		{search.Query{Text: "sqlite"}, []string{"exec-a/3 observation.recorded"}},
		{search.Query{Text: "zebra"}, []string{"exec-a/4 activity.updated"}},
		{search.Query{Text: "walrus"}, []string{"exec-a/5 observation.recorded"}},
		{search.Query{Text: "vault"}, []string{"exec-b/3 observation.recorded"}},
		{search.Query{Text: "flamingo", Agent: "codex"}, []string{"exec-b/2 message.accepted", "exec-b/4 observation.recorded"}},
		{search.Query{Text: "flamingo", OwnerEntity: "Task"}, []string{"exec-a/2 message.accepted"}},
		{search.Query{Text: "flamingo", OwnerEntity: "Mission", OwnerID: "m-2"}, []string{}},
		{search.Query{Text: "flamingo", Executions: []string{"exec-b"}}, []string{"exec-b/2 message.accepted", "exec-b/4 observation.recorded"}},
		{search.Query{Text: "flamingo", Executions: []string{}}, []string{}},
		{search.Query{Text: "flamingo", Until: time.Now().Add(-time.Hour)}, []string{}},
		{search.Query{Text: "flamingo", Since: time.Now().Add(-time.Hour)}, []string{"exec-a/2 message.accepted", "exec-b/2 message.accepted", "exec-b/4 observation.recorded"}},
		{search.Query{Text: "flamingo -deploy -ready"}, []string{"exec-a/2 message.accepted"}},
	} {
		if got := hits(t, x, c.q); !slices.Equal(got, c.want) {
			t.Errorf("Search(%+v) = %v, want %v", c.q, got, c.want)
		}
	}
	res, err := x.Search(search.Query{Text: "walrus"})
	if err != nil {
		t.Fatal(err)
	}
	if h := res.Hits[0]; !strings.Contains(h.Snippet, "<mark>walrus</mark>") || h.Time.IsZero() {
		t.Errorf("hit %+v: want a snippet marking walrus and a time", h)
	}

	// A record appended while Follow runs becomes searchable.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Follow(ctx, s) }()
	appendAll(t, s, a, storetest.Message("m2", "now the pelican"))
	deadline := time.Now().Add(10 * time.Second)
	for len(hits(t, x, search.Query{Text: "pelican"})) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the appended record never became searchable")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRestartCatchesUpWithoutDuplicates(t *testing.T) {
	s := startLog(t)
	a, _ := fill(t, s)
	path := filepath.Join(t.TempDir(), "search")
	x := open(t, path)
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	cp, _ := x.Checkpoint()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	appendAll(t, s, a, storetest.Message("m2", "the flamingo again"))
	x = open(t, path)
	defer x.Close()
	if got, _ := x.Checkpoint(); got != cp {
		t.Fatalf("checkpoint after reopen = %d, want %d", got, cp)
	}
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	want := []string{"exec-a/2 message.accepted", "exec-a/6 message.accepted", "exec-b/2 message.accepted", "exec-b/4 observation.recorded"}
	if got := hits(t, x, search.Query{Text: "flamingo"}); !slices.Equal(got, want) {
		t.Errorf("after restart: %v, want %v", got, want)
	}
	res, _ := x.Search(search.Query{Text: "flamingo"})
	if res.Total != uint64(len(want)) {
		t.Errorf("total = %d, want %d (no duplicates)", res.Total, len(want))
	}
}

func TestRebuildGivesTheSameHits(t *testing.T) {
	s := startLog(t)
	fill(t, s)
	x := open(t, filepath.Join(t.TempDir(), "search"))
	defer x.Close()
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	queries := []string{"flamingo", "sqlite", "zebra", "walrus", "vault"}
	var before [][]string
	for _, q := range queries {
		before = append(before, hits(t, x, search.Query{Text: q}))
	}
	var calls int
	if err := x.Rebuild(context.Background(), s, func(done, total uint64) { calls++ }); err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("rebuild reported no progress")
	}
	for i, q := range queries {
		if got := hits(t, x, search.Query{Text: q}); !slices.Equal(got, before[i]) {
			t.Errorf("after rebuild %q: %v, want %v", q, got, before[i])
		}
	}
	last, _ := s.LastOffset(context.Background())
	if cp, _ := x.Checkpoint(); cp != last {
		t.Errorf("checkpoint after rebuild = %d, want %d", cp, last)
	}
}

func TestBadQueries(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "search"))
	defer x.Close()
	for _, q := range []search.Query{
		{Text: "  "},
		{Text: `"unclosed`},
		{Text: "a", Limit: search.MaxLimit + 1},
		{Text: "a", OwnerID: "x"},
		{Text: "a", Since: time.Now(), Until: time.Now().Add(-time.Hour)},
	} {
		_, err := x.Search(q)
		var bad *search.BadQueryError
		if !errors.As(err, &bad) {
			t.Errorf("Search(%+v) = %v, want a BadQueryError", q, err)
		}
	}
}

func TestDamagedIndexIsMovedAside(t *testing.T) {
	s := startLog(t)
	fill(t, s)
	path := filepath.Join(t.TempDir(), "search")
	x := open(t, path)
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "index_meta.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := search.Open(path); err == nil {
		t.Fatal("Open of a damaged index succeeded")
	}
	x, aside, err := search.OpenOrMoveAside(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if _, err := os.Stat(aside); aside == "" || err != nil {
		t.Fatalf("moved aside to %q: %v", aside, err)
	}
	if cp, _ := x.Checkpoint(); cp != 0 {
		t.Fatalf("new index checkpoint %d, want 0", cp)
	}
	if err := x.CatchUp(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := hits(t, x, search.Query{Text: "walrus"}); len(got) != 1 {
		t.Errorf("walrus after the new index caught up: %v", got)
	}
}
