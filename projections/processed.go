package projections

import (
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// An execution's processed message and observation ids and its decisions
// grow with its journal, so they are not part of the stored state, which
// every batch that touches the execution rewrites. They live in the
// processed bucket, one nested bucket per execution, one key each:
//
//	message id      \x00 m  -> sequence (uint64)
//	observation id  \x00 o  -> sequence (uint64)
//	decided id      \x00 d  -> DecisionRef (codec.go)
//
// The id comes first so that an observation and the decision on it, which
// usually follow each other in a batch, land on the same page: with the
// kind first they would dirty two pages of the bucket in every transaction,
// which made the catch-up write about 11% more. The kind letters are
// persisted: never change them.
const (
	processedMessage     = 'm'
	processedObservation = 'o'
	processedDecision    = 'd'
)

// emptyProcessed gives s empty processed-id maps, as a state has between
// records while a batch folds it.
func emptyProcessed(s *execution.State) {
	if s.ProcessedMessages == nil {
		s.ProcessedMessages = map[string]uint64{}
	} else {
		clear(s.ProcessedMessages)
	}
	if s.ProcessedObservations == nil {
		s.ProcessedObservations = map[string]uint64{}
	} else {
		clear(s.ProcessedObservations)
	}
	if s.Decisions == nil {
		s.Decisions = map[string]execution.DecisionRef{}
	} else {
		clear(s.Decisions)
	}
}

// processedKey writes id \x00 kind into a.key and returns it.
func (a *applier) processedKey(kind byte, id string) []byte {
	a.key = append(append(append(a.key[:0], id...), 0), kind)
	return a.key
}

// idsBucket returns the execution's processed bucket, nil when it has none
// and create is false.
func (a *applier) idsBucket(p *pending, id string, create bool) (*bolt.Bucket, error) {
	if !p.idsKnown {
		p.ids, p.idsKnown = a.processed.Bucket([]byte(id)), true
	}
	if p.ids == nil && create {
		b, err := a.processed.CreateBucket([]byte(id))
		if err != nil {
			return nil, err
		}
		p.ids = b
	}
	return p.ids, nil
}

// hydrate loads into s's maps the processed ids that r's fold looks up, so
// that State.Apply recognizes a duplicate exactly as a full replay does: the
// message id of a message, the observation id of an observation, and the
// observation and message ids of a decision. It follows what State.Apply
// reads: a fold that starts looking up another id needs it loaded here.
func (a *applier) hydrate(p *pending, s *execution.State, r eventstore.Record) error {
	var lookups [2]struct {
		kind byte
		id   string
	}
	n := 0
	add := func(kind byte, id string) {
		if id != "" {
			lookups[n].kind, lookups[n].id = kind, id
			n++
		}
	}
	switch r := r.(type) {
	case *eventstore.MessageAccepted:
		add(processedMessage, r.MessageID)
	case *eventstore.Observation:
		add(processedObservation, r.ObservationID)
	case *eventstore.Decision:
		add(processedDecision, r.ObservationID)
		add(processedDecision, r.MessageID)
	}
	if n == 0 {
		return nil
	}
	ids, err := a.idsBucket(p, s.ID, false)
	if ids == nil || err != nil {
		return err
	}
	for _, l := range lookups[:n] {
		k := a.processedKey(l.kind, l.id)
		v := ids.Get(k)
		if v == nil {
			continue
		}
		if err := a.setProcessed(s, l.kind, l.id, v); err != nil {
			return err
		}
		a.hydrated = append(a.hydrated, string(k))
	}
	return nil
}

// setProcessed puts one stored entry into s's maps.
func (a *applier) setProcessed(s *execution.State, kind byte, id string, v []byte) error {
	bad := func(err error) error {
		return corrupt(a.db.cfg.Path, fmt.Sprintf("processed id %q (%c) of %q does not decode", id, kind, s.ID), err)
	}
	switch kind {
	case processedMessage, processedObservation:
		if len(v) != 8 {
			return bad(fmt.Errorf("%d bytes (want 8)", len(v)))
		}
		m := s.ProcessedMessages
		if kind == processedObservation {
			m = s.ProcessedObservations
		}
		m[id] = binary.BigEndian.Uint64(v)
	case processedDecision:
		d, err := decodeDecision(v)
		if err != nil {
			return bad(err)
		}
		s.Decisions[id] = d
	}
	return nil
}

// storeProcessed writes the ids the last record added to s's maps, which
// are the ones besides those hydrate loaded, and empties the maps again.
func (a *applier) storeProcessed(p *pending, s *execution.State) error {
	if len(s.ProcessedMessages)+len(s.ProcessedObservations)+len(s.Decisions) == len(a.hydrated) {
		emptyProcessed(s)
		return nil
	}
	ids, err := a.idsBucket(p, s.ID, true)
	if err != nil {
		return err
	}
	put := func(kind byte, id string, v []byte) error {
		k := a.processedKey(kind, id)
		if len(a.hydrated) > 0 && slices.Contains(a.hydrated, string(k)) {
			return nil
		}
		return ids.Put(k, v)
	}
	for id, seq := range s.ProcessedMessages {
		if err := put(processedMessage, id, a.keepU64(seq)); err != nil {
			return err
		}
	}
	for id, seq := range s.ProcessedObservations {
		if err := put(processedObservation, id, a.keepU64(seq)); err != nil {
			return err
		}
	}
	for id, d := range s.Decisions {
		a.scratch = encodeDecision(a.scratch[:0], d)
		if err := put(processedDecision, id, a.keep(a.scratch)); err != nil {
			return err
		}
	}
	emptyProcessed(s)
	return nil
}

// loadProcessed fills s's maps with every processed id of the execution.
func loadProcessed(tx *bolt.Tx, path string, s *execution.State) error {
	emptyProcessed(s)
	b := tx.Bucket(bucketProcessed).Bucket([]byte(s.ID))
	if b == nil {
		return nil
	}
	return b.ForEach(func(k, v []byte) error {
		if !validProcessed(k, v) {
			return corrupt(path, fmt.Sprintf("processed ids of %q have a bad entry at key %q", s.ID, k), nil)
		}
		id := string(k[:len(k)-2])
		switch k[len(k)-1] {
		case processedMessage:
			s.ProcessedMessages[id] = binary.BigEndian.Uint64(v)
		case processedObservation:
			s.ProcessedObservations[id] = binary.BigEndian.Uint64(v)
		default:
			d, err := decodeDecision(v)
			if err != nil {
				return corrupt(path, fmt.Sprintf("decision on %q of %q does not decode", id, s.ID), err)
			}
			s.Decisions[id] = d
		}
		return nil
	})
}

// validProcessed checks the shape of one processed entry.
func validProcessed(k, v []byte) bool {
	if len(k) < 2 || k[len(k)-2] != 0 {
		return false
	}
	switch k[len(k)-1] {
	case processedMessage, processedObservation:
		return len(v) == 8
	case processedDecision:
		return len(v) > 0 && v[0] == decisionFormat
	}
	return false
}

// ProcessedID answers whether an execution's journal holds a message
// (observation false) or an observation (observation true) with id, and at
// which sequence: one key lookup, for writers that must recognize a retried
// id long after the log's duplicate window. Records not applied yet are
// not known: the window covers those.
func (db *DB) ProcessedID(executionID string, observation bool, id string) (seq uint64, ok bool, err error) {
	kind := byte(processedMessage)
	if observation {
		kind = processedObservation
	}
	err = db.view(func(tx *bolt.Tx) error {
		ids := tx.Bucket(bucketProcessed).Bucket([]byte(executionID))
		if ids == nil {
			return nil
		}
		v := ids.Get(append(append([]byte(id), 0), kind))
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return corrupt(db.cfg.Path, fmt.Sprintf("processed id %q (%c) of %q does not decode", id, kind, executionID),
				fmt.Errorf("%d bytes (want 8)", len(v)))
		}
		seq, ok = binary.BigEndian.Uint64(v), true
		return nil
	})
	return seq, ok, err
}
