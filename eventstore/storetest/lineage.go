package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// testForkAndResumeLinks: a header's links are stored and read back as
// written, and a link to a journal, sequence or event the store does not
// hold is refused with ErrBadLink and writes nothing.
func testForkAndResumeLinks(t *testing.T, f Factory) {
	ctx := context.Background()
	s := open(t, f)
	parent := Ref(eventstore.OwnerTask, "t-1", "parent")
	ensure(t, s, parent)
	mustAppend(t, s, parent, Message("m-1", "one"))
	mustAppend(t, s, parent, Message("m-2", "two"))
	entries := Collect(t, s.ReadJournal(ctx, parent, 2))
	eventID, err := eventstore.EventID(entries[0].Record)
	if err != nil {
		t.Fatal(err)
	}
	link := func(seq uint64, id string) *eventstore.ForkLink {
		return &eventstore.ForkLink{JournalID: parent.JournalID, AgentExecutionID: "parent", Sequence: seq, EventID: id}
	}
	zero := eventstore.EventIDPrefix + strings.Repeat("0", 64)
	missing := Ref(eventstore.OwnerTask, "t-1", "nobody")
	for _, c := range []struct {
		name string
		set  func(h *eventstore.Header)
		want string
	}{
		{"unknown parent", func(h *eventstore.Header) {
			h.ForkedFrom = &eventstore.ForkLink{JournalID: missing.JournalID, AgentExecutionID: "nobody", Sequence: 1, EventID: eventID}
		}, "no journal"},
		{"past the parent's end", func(h *eventstore.Header) { h.ForkedFrom = link(4, eventID) }, "past the end"},
		{"another record's event id", func(h *eventstore.Header) { h.ForkedFrom = link(2, zero) }, "is not the event id"},
		{"unknown resumed journal", func(h *eventstore.Header) {
			h.SessionID = "nobody"
			h.Resumes = &eventstore.ResumeLink{JournalID: missing.JournalID, AgentExecutionID: "nobody"}
		}, "no journal"},
		{"resume in another session", func(h *eventstore.Header) {
			h.SessionID = "elsewhere"
			h.Resumes = &eventstore.ResumeLink{JournalID: parent.JournalID, AgentExecutionID: "parent"}
		}, "keeps its session"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := Ref(eventstore.OwnerTask, "t-1", "bad-"+strings.ReplaceAll(c.name, " ", "-")[:8])
			h := Header("fixture")
			c.set(h)
			_, err := s.EnsureJournal(ctx, ref, h)
			if !errors.Is(err, eventstore.ErrBadLink) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrBadLink saying %q", err, c.want)
			}
			if _, err := s.Head(ctx, ref); !errors.Is(err, eventstore.ErrJournalNotFound) {
				t.Fatalf("Head after a refused header: %v, want ErrJournalNotFound (nothing written)", err)
			}
		})
	}

	fork := Ref(eventstore.OwnerTask, "t-1", "fork")
	h := Header("fixture")
	h.SessionID = "fork"
	h.ForkedFrom = link(2, eventID)
	ensure2(t, s, fork, h)
	resumed := Ref(eventstore.OwnerTask, "t-1", "resumed")
	rh := Header("fixture")
	rh.SessionID = "parent"
	rh.Resumes = &eventstore.ResumeLink{JournalID: parent.JournalID, AgentExecutionID: "parent"}
	ensure2(t, s, resumed, rh)
	if f.Reopen != nil {
		s = f.Reopen(t, s)
		t.Cleanup(func() { s.Close() })
	}
	got := Collect(t, s.ReadJournal(ctx, fork, 1))[0].Record.(*eventstore.Header)
	if got.ForkedFrom == nil || *got.ForkedFrom != *link(2, eventID) || got.SessionID != "fork" {
		t.Fatalf("stored fork header: forkedFrom %+v sessionId %q, want %+v, fork", got.ForkedFrom, got.SessionID, link(2, eventID))
	}
	gotR := Collect(t, s.ReadJournal(ctx, resumed, 1))[0].Record.(*eventstore.Header)
	if gotR.Resumes == nil || gotR.Resumes.AgentExecutionID != "parent" || gotR.Session() != "parent" {
		t.Fatalf("stored resume header: resumes %+v session %q, want parent", gotR.Resumes, gotR.Session())
	}
}

func ensure2(t *testing.T, s eventstore.Store, ref eventstore.Reference, h *eventstore.Header) {
	t.Helper()
	if _, err := s.EnsureJournal(context.Background(), ref, h); err != nil {
		t.Fatalf("EnsureJournal(%s): %v", ref, err)
	}
}

// testInterruptionRecord: an interruption is stored once per journal (its
// id is the journal's own), and read back as written.
func testInterruptionRecord(t *testing.T, f Factory) {
	ctx := context.Background()
	s := open(t, f)
	ref := Ref(eventstore.OwnerTask, "t-1", "exec-1")
	ensure(t, s, ref)
	in := &eventstore.Interruption{Reason: eventstore.InterruptCanceled, Turn: 1, MessageID: "m-1", InputRequestID: "req-1"}
	e1 := mustAppend(t, s, ref, in)
	again := &eventstore.Interruption{Reason: eventstore.InterruptCanceled, Turn: 1, MessageID: "m-1", InputRequestID: "req-1"}
	e2 := mustAppend(t, s, ref, again)
	if e1.Record.RecordBase().Sequence != 2 || e2.Record.RecordBase().Sequence != 2 {
		t.Fatalf("interruption sequences %d and %d, want 2 and 2 (one per journal)", e1.Record.RecordBase().Sequence, e2.Record.RecordBase().Sequence)
	}
	got := Collect(t, s.ReadJournal(ctx, ref, 2))
	r, ok := got[0].Record.(*eventstore.Interruption)
	if len(got) != 1 || !ok || r.Reason != eventstore.InterruptCanceled || r.MessageID != "m-1" || r.InputRequestID != "req-1" || r.Turn != 1 {
		t.Fatalf("read back %d records, first %+v; want the interruption as written", len(got), got[0].Record)
	}
}
