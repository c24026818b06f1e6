package client_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
)

func TestLineageGraphAndOrigin(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	c := client.New(s.HTTP.URL, apitest.Token)
	defer c.Close()
	ctx := context.Background()

	h := &eventstore.Header{AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless}}
	parent, _ := eventstore.NewReference(eventstore.OwnerTask, "t-1", "cl-parent")
	if _, err := s.Store.EnsureJournal(ctx, parent, h); err != nil {
		t.Fatal(err)
	}
	var hdr eventstore.Record
	for e, err := range s.Store.ReadJournal(ctx, parent, 1) {
		if err != nil {
			t.Fatal(err)
		}
		hdr = e.Record
		break
	}
	id, _ := eventstore.EventID(hdr)
	fh := eventstore.Header{AgentID: "generic", ProtocolDescriptor: h.ProtocolDescriptor}
	fh.ForkedFrom = &eventstore.ForkLink{JournalID: hdr.RecordBase().JournalID, AgentExecutionID: "cl-parent", Sequence: 1, EventID: id}
	fork, _ := eventstore.NewReference(eventstore.OwnerTask, "t-1", "cl-fork")
	if _, err := s.Store.EnsureJournal(ctx, fork, &fh); err != nil {
		t.Fatal(err)
	}

	lin, err := c.Lineage(ctx, "cl-fork", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if lin.Root != "cl-parent" || len(lin.Tree.Children) != 1 || !lin.Tree.Children[0].Current || len(lin.History) != 2 || !lin.History[0].Inherited || lin.History[0].EventID != id {
		t.Errorf("lineage: got %+v, want the fork under cl-parent with the parent's header inherited", lin)
	}
	g, err := c.Graph(ctx, "cl-fork")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := g.Node(id); !ok || !n.External || n.ExecutionID != "cl-parent" {
		t.Errorf("graph of the fork: the pinned record is %+v (%v), want an external node of cl-parent", n, ok)
	}
	var dot bytes.Buffer
	if err := c.GraphDOT(ctx, &dot); err != nil || !strings.Contains(dot.String(), `"run:cl-fork" -> "run:cl-parent" [label="DERIVED_FROM"];`) {
		t.Errorf("DOT: %v\n%s", err, dot.String())
	}
	o, err := c.EventOrigin(ctx, id, "cl-fork")
	if err != nil || o.ExecutionID != "cl-parent" || o.Record != eventstore.KindHeader {
		t.Errorf("origin: got %+v, %v; want cl-parent's header", o, err)
	}
	if _, err := c.EventOrigin(ctx, "nope", ""); !errors.Is(err, client.ErrInvalidField) {
		t.Errorf("a malformed event id: got %v, want ErrInvalidField", err)
	}
	if _, err := c.Lineage(ctx, "nope", time.Time{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("an unknown execution: got %v, want ErrNotFound", err)
	}
}
