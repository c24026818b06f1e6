package eventstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestReadRecordsPages: a journal longer than a page is read page by page,
// other journals' records between its own, to the same records as
// ReadJournal gives.
func TestReadRecordsPages(t *testing.T) {
	old := recordsPage
	recordsPage = 7
	defer func() { recordsPage = old }()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "J", Subjects: []string{"journal.>"}, Storage: jetstream.FileStorage, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	s, err := OpenJetStream(ctx, js, JetStreamConfig{Stream: "J"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	refs := make([]Reference, 2)
	for i := range refs {
		if refs[i], err = NewReference(OwnerTask, "t", fmt.Sprintf("ae-%d", i)); err != nil {
			t.Fatal(err)
		}
		h := &Header{AgentID: "generic", ProtocolDescriptor: ProtocolDescriptor{Posture: PostureStructuredHeadless}}
		if refs[i], err = s.EnsureJournal(ctx, refs[i], h); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		for _, ref := range refs {
			m := &MessageAccepted{MessageID: fmt.Sprintf("m-%d", i), Source: SourceOperator, MessageType: "prompt", Payload: []byte(`{"text":"x"}`), MutatesContext: true}
			if _, err := s.Append(ctx, ref, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []Record
	for e, err := range s.ReadJournal(ctx, refs[1], 1) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e.Record)
	}
	for _, to := range []uint64{0, 7, 8, 20, 31} {
		got, err := s.ReadRecords(ctx, JournalBound{Ref: refs[1], To: to})
		if err != nil {
			t.Fatal(err)
		}
		w := want
		if to > 0 {
			w = want[:min(to, uint64(len(want)))]
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Fatalf("to %d, pages of %d (-ReadJournal +ReadRecords):\n%s", to, recordsPage, diff)
		}
	}
}
