package eventstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
)

// An id made only of dots names a directory in a URL path ("/v1/journals/..")
// or a file path: it is refused wherever an id is taken, saying what is
// accepted; dots beside other characters are an id like any other.
func TestDotIDsRefused(t *testing.T) {
	for _, id := range []string{".", "..", "..."} {
		if _, err := eventstore.EscapeID(id); !errors.Is(err, eventstore.ErrInvalidID) || !strings.Contains(err.Error(), "only dots") {
			t.Errorf("EscapeID(%q): got %v, want ErrInvalidID saying it is only dots", id, err)
		}
		if _, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id); !errors.Is(err, eventstore.ErrInvalidID) {
			t.Errorf("NewReference(execution %q): got %v, want ErrInvalidID", id, err)
		}
		if _, err := eventstore.NewReference(eventstore.OwnerTask, id, "ae-1"); !errors.Is(err, eventstore.ErrInvalidID) {
			t.Errorf("NewReference(owner %q): got %v, want ErrInvalidID", id, err)
		}
		if _, err := eventstore.UnescapeID(strings.Repeat("%2E", len(id))); !errors.Is(err, eventstore.ErrInvalidID) {
			t.Errorf("UnescapeID(%q escaped): got %v, want ErrInvalidID", id, err)
		}
	}
	for _, id := range []string{".a", "a..", "v1.2"} {
		if _, err := eventstore.NewReference(eventstore.OwnerTask, "t-1", id); err != nil {
			t.Errorf("NewReference(execution %q): got %v, want no error", id, err)
		}
	}
}

// The store refuses a journal whose execution id is only dots, and a lookup
// of one finds nothing rather than another journal.
func TestStoreRefusesDotIDs(t *testing.T) {
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, id := range []string{".", ".."} {
		if _, err := s.Lookup(ctx, id); !errors.Is(err, eventstore.ErrInvalidID) && !errors.Is(err, eventstore.ErrJournalNotFound) {
			t.Errorf("Lookup(%q): got %v, want ErrInvalidID or ErrJournalNotFound", id, err)
		}
		ref := eventstore.Reference{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-1", AgentExecutionID: id,
			JournalID: eventstore.JournalIDFor(eventstore.OwnerTask, "t-1", id)}
		h := &eventstore.Header{AgentID: "generic", ProtocolDescriptor: eventstore.ProtocolDescriptor{}}
		if _, err := s.EnsureJournal(ctx, ref, h); !errors.Is(err, eventstore.ErrInvalidID) {
			t.Errorf("EnsureJournal(%q): got %v, want ErrInvalidID", id, err)
		}
	}
}
