package storebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
)

// server is an embedded server on a scratch directory with a store on it.
type server struct {
	dir   string
	bus   *bus.Bus
	store *eventstore.JetStreamStore
}

// startServer starts a server in a fresh subdirectory of parent whose name
// starts with name.
func startServer(ctx context.Context, parent, name string, sync bus.SyncMode) (*server, error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("start %s server: %w", name, err)
	}
	dir, err := os.MkdirTemp(parent, name+"-")
	if err != nil {
		return nil, fmt.Errorf("start %s server: %w", name, err)
	}
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	cfg.Sync = sync
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start %s server: %w", name, err), os.RemoveAll(dir))
	}
	st, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{
		Stream:        b.StreamName(),
		SubjectPrefix: bus.SubjectPrefix,
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("start %s server: %w", name, err), b.Close(), os.RemoveAll(dir))
	}
	return &server{dir: dir, bus: b, store: st}, nil
}

// Close closes the store and the server and removes the directory.
func (s *server) Close() error {
	return errors.Join(s.store.Close(), s.bus.Close(), os.RemoveAll(s.dir))
}

// benchOwner is the owner id of every benchmark journal.
const benchOwner = "storebench"

// references returns the references of benchmark journals by name, without
// creating them.
func references(names ...string) ([]eventstore.Reference, error) {
	refs := make([]eventstore.Reference, len(names))
	for i, name := range names {
		ref, err := eventstore.NewReference(eventstore.OwnerTask, benchOwner, name)
		if err != nil {
			return nil, fmt.Errorf("journal %q: %w", name, err)
		}
		refs[i] = ref
	}
	return refs, nil
}

// ensureJournals creates benchmark journals by name.
func ensureJournals(ctx context.Context, st *eventstore.JetStreamStore, names ...string) ([]eventstore.Reference, error) {
	refs, err := references(names...)
	if err != nil {
		return nil, err
	}
	for i, ref := range refs {
		if refs[i], err = st.EnsureJournal(ctx, ref, header()); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

func header() *eventstore.Header {
	return &eventstore.Header{
		AgentID:            benchOwner,
		ProtocolDescriptor: eventstore.ProtocolDescriptor{Posture: eventstore.PostureStructuredHeadless},
	}
}

// observation is the record the benchmark writes: an observation carrying a
// progress signal, the most frequent record of a running agent.
func observation(id, summary string) *eventstore.Observation {
	return &eventstore.Observation{
		ObservationID: id,
		Source:        eventstore.ObservedMCP,
		Confidence:    eventstore.ConfidenceAuthoritative,
		Signal:        eventstore.NewSignal(&eventstore.ProgressSignal{Summary: summary}),
	}
}

// observationID is the id of the i-th observation of a measurement; the raw
// side derives its Nats-Msg-Id values from the same ids.
func observationID(i int) string { return fmt.Sprintf("obs-%d", i) }

// observations returns n fresh records to append.
func observations(n int, summary string) []eventstore.Record {
	recs := make([]eventstore.Record, n)
	for i := range recs {
		recs[i] = observation(observationID(i), summary)
	}
	return recs
}

// appendRecords appends record i to journal i%len(refs) from the given
// number of goroutines.
func appendRecords(ctx context.Context, st *eventstore.JetStreamStore, refs []eventstore.Reference, recs []eventstore.Record, writers int) error {
	return spread(ctx, len(recs), writers, func(ctx context.Context, i int) error {
		_, err := st.Append(ctx, refs[i%len(refs)], recs[i])
		return err
	})
}

// writeInterleaved creates journals by name and appends to them in turn
// until each holds n records, its header included.
func writeInterleaved(ctx context.Context, st *eventstore.JetStreamStore, n int, summary string, names ...string) ([]eventstore.Reference, error) {
	refs, err := ensureJournals(ctx, st, names...)
	if err != nil {
		return nil, err
	}
	if err := appendRecords(ctx, st, refs, observations((n-1)*len(refs), summary), 1); err != nil {
		return nil, err
	}
	return refs, nil
}

// rawMessages returns n messages carrying data, message i on the subject of
// refs[i%len(refs)] with the Nats-Msg-Id the store would give observation i
// of that journal.
func rawMessages(refs []eventstore.Reference, n int, data []byte) ([]*nats.Msg, error) {
	subjects := make([]string, len(refs))
	for k, ref := range refs {
		subj, err := ref.Subject(bus.SubjectPrefix)
		if err != nil {
			return nil, fmt.Errorf("subject of %s: %w", ref, err)
		}
		subjects[k] = subj
	}
	msgs := make([]*nats.Msg, n)
	for i := range msgs {
		k := i % len(refs)
		m := &nats.Msg{Subject: subjects[k], Data: data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, eventstore.RecordID(refs[k].JournalID, eventstore.KindObservation, observationID(i)))
		msgs[i] = m
	}
	return msgs, nil
}

// publish publishes every message and waits for each ack, from the given
// number of goroutines.
func publish(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, writers int) error {
	return spread(ctx, len(msgs), writers, func(ctx context.Context, i int) error {
		ack, err := js.PublishMsg(ctx, msgs[i])
		if err != nil {
			return fmt.Errorf("publish to %s: %w", msgs[i].Subject, err)
		}
		if ack.Duplicate {
			return fmt.Errorf("publish to %s: message id %s was already stored", msgs[i].Subject, msgs[i].Header.Get(jetstream.MsgIDHeader))
		}
		return nil
	})
}

// spread calls do for 0 … n-1 from the given number of goroutines, each
// taking the next index as it finishes the last. The first error stops the
// others.
func spread(ctx context.Context, n, writers int, do func(ctx context.Context, i int) error) error {
	if writers <= 1 {
		for i := range n {
			if err := do(ctx, i); err != nil {
				return err
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// readJournal reads a whole journal and returns how many records it held.
func readJournal(ctx context.Context, st *eventstore.JetStreamStore, ref eventstore.Reference) (int, error) {
	n := 0
	for _, err := range st.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// readLog reads the whole log and returns how many records it held.
func readLog(ctx context.Context, st *eventstore.JetStreamStore) (int, error) {
	n := 0
	for _, err := range st.ReadLog(ctx, 1) {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// readRaw reads every message on filter with an ordered consumer, without
// decoding, and returns how many there were. The filter must match at least
// one message.
func readRaw(ctx context.Context, stream jetstream.Stream, filter string) (int, error) {
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return 0, fmt.Errorf("ordered consumer on %s: %w", filter, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return 0, fmt.Errorf("ordered consumer on %s: %w", filter, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for n := 1; ; n++ {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return n - 1, fmt.Errorf("read %s: %w", filter, err)
		}
		meta, err := m.Metadata()
		if err != nil {
			return n, fmt.Errorf("read %s: %w", filter, err)
		}
		if meta.NumPending == 0 {
			return n, nil
		}
	}
}
