package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Summary is the list view of an execution. It is stored as the API
// answers it, so its one declaration is the wire form's.
type Summary = wire.Summary

// summaryRow is a summary as stored: with the journal id, so that
// JournalsByOwner answers without decoding whole states.
type summaryRow struct {
	Summary
	JournalID string `json:"journalId"`
}

func rowOf(s *execution.State) summaryRow {
	return summaryRow{Summary: SummaryOf(s), JournalID: s.Journal.JournalID}
}

// SummaryOf is the list view of a state, as the projection stores it; a
// state folded up to some record gives the summary as of that record.
func SummaryOf(s *execution.State) Summary {
	return Summary{
		ID: s.ID, AgentID: s.AgentID, OwnerEntity: s.OwnerEntity, OwnerID: s.OwnerID,
		Lifecycle: s.Lifecycle, Attention: s.Attention, Activity: s.Activity,
		CurrentInputRequestID: s.CurrentInputRequestID,
		CreatedAt:             s.CreatedAt, UpdatedAt: s.UpdatedAt,
		RecordCount: s.Journal.RecordCount, LastSequence: s.Journal.LastSequence,
		LatestActivity: s.Latest.Activity, SessionID: s.SessionID, Host: s.Host,
		Question: s.CurrentInputQuestion, Progress: progressOf(s.Latest.Progress), Prompt: s.Prompt,
	}
}

// progressOf is a progress report's summary, "" for none.
func progressOf(p *eventstore.Progress) string {
	if p == nil {
		return ""
	}
	return p.Summary
}

func (r summaryRow) reference() eventstore.Reference {
	return eventstore.Reference{
		JournalID: r.JournalID, OwnerEntity: r.OwnerEntity, OwnerID: r.OwnerID, AgentExecutionID: r.ID,
		RecordCount: r.RecordCount, LastSequence: r.LastSequence,
	}
}

// Checkpoint returns the offset of the last log record applied, 0 if none.
func (db *DB) Checkpoint() (uint64, error) {
	var cp uint64
	err := db.view(func(tx *bolt.Tx) error {
		cp = checkpoint(tx)
		return nil
	})
	return cp, err
}

func checkpoint(tx *bolt.Tx) uint64 {
	v := tx.Bucket(bucketMeta).Get(keyCheckpoint)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// errNoChange rolls back a transaction that would write nothing, which saves
// the commit's fsync.
var errNoChange = errors.New("no change")

// Apply applies a batch of log entries in one transaction, writing the
// changed executions, their timeline items, processed ids, summaries,
// indexes and the new checkpoint together. Entries at or below the
// checkpoint are skipped, so applying a batch again is a no-op; an entry
// beyond checkpoint+1 is an error matching ErrGap and nothing of the batch
// is applied. A record that its execution refuses (no header yet, another
// journal's record, out of order) is logged and skipped; one already folded
// into its execution is skipped silently. An entry without a record (one
// the log holds but no reader can decode) only moves the checkpoint.
func (db *DB) Apply(batch []eventstore.Entry) error {
	_, err := db.f.Apply(batch)
	return err
}

// apply applies the entries of batches in one transaction and returns the
// checkpoint after them (follower.Sink's Commit).
func (db *DB) apply(batches iter.Seq[[]eventstore.Entry]) (uint64, error) {
	return db.advance(func(tx *bolt.Tx, cp uint64) (uint64, error) {
		start := cp
		a := newApplier(db, tx)
		for batch := range batches {
			for _, e := range batch {
				if e.Offset <= cp {
					continue
				}
				if e.Offset != cp+1 {
					return 0, fmt.Errorf("%w: entry at offset %d follows checkpoint %d", ErrGap, e.Offset, cp)
				}
				if e.Record != nil {
					if err := a.record(e); err != nil {
						return 0, err
					}
				}
				cp = e.Offset
			}
		}
		if cp == start {
			return cp, errNoChange
		}
		return cp, a.flush()
	})
}

// advance runs step in one write transaction, given the checkpoint, and
// stores the checkpoint step returns with what it wrote; step returns
// errNoChange (with the checkpoint) to write nothing, which also saves the
// commit's fsync. Writers take turns.
func (db *DB) advance(step func(tx *bolt.Tx, cp uint64) (uint64, error)) (uint64, error) {
	db.writing.Lock()
	defer db.writing.Unlock()
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return 0, fmt.Errorf("apply batch to %s: %w", db.cfg.Path, ErrClosed)
	}
	var cp uint64
	// A commit goes unsynced only once the file durably says so; the
	// commit that says so is synced.
	mark := db.boot != "" && !db.marked
	db.bolt.NoSync = db.cfg.NoSync || db.boot != "" && db.marked
	err := db.update(func(tx *bolt.Tx) error {
		var err error
		if cp, err = step(tx, checkpoint(tx)); err != nil {
			return err
		}
		if mark {
			if err := tx.Bucket(bucketMeta).Put(keyUnsynced, []byte(db.boot)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyCheckpoint, u64(cp))
	})
	if err == nil && mark {
		db.marked = true
	}
	switch {
	case errors.Is(err, errNoChange):
		return cp, nil
	case err != nil:
		// A batch folds records into cached states that the file, rolled
		// back, does not hold.
		db.states.purge()
		return 0, fmt.Errorf("apply batch to %s: %w", db.cfg.Path, err)
	}
	return cp, nil
}

// applier folds one batch inside its transaction.
type applier struct {
	db        *DB
	tx        *bolt.Tx
	execs     *bolt.Bucket
	timeline  *bolt.Bucket
	processed *bolt.Bucket
	contract  *bolt.Bucket
	touched   map[string]*pending
	order     []string // execution ids in first-touched order

	// key is scratch space for processed-id keys; bbolt copies keys.
	key []byte
	// scratch is where values are encoded before keep copies them.
	scratch []byte
	// slab is where keep puts values: bbolt holds on to a value until the
	// commit, so each needs bytes of its own, and one allocation for many
	// small values spares the collector. It starts as the last
	// transaction's newest slab, emptied (DB.slab): that transaction has
	// ended, and a new slab for every commit of a caught-up projector,
	// which commits a few records at a time, was a tenth of a loaded
	// daemon's allocations.
	slab []byte
	// hydrated are the processed-id keys the current record loaded into
	// its state: they are in the file already.
	hydrated []string
}

func newApplier(db *DB, tx *bolt.Tx) *applier {
	return &applier{
		db: db, tx: tx,
		execs:     tx.Bucket(bucketExecutions),
		timeline:  tx.Bucket(bucketTimeline),
		processed: tx.Bucket(bucketProcessed),
		contract:  tx.Bucket(bucketContract),
		touched:   map[string]*pending{},
		slab:      db.slab[:0],
	}
}

// pending is an execution loaded into the batch.
type pending struct {
	state *execution.State // nil until a header creates it
	old   *summaryRow      // as stored before the batch; nil if new
	dirty bool
	items *bolt.Bucket // its timeline bucket, once created in this tx
	// ids is its processed bucket, once looked up (idsKnown) and found or
	// created.
	ids      *bolt.Bucket
	idsKnown bool
	// run is the execution's contract fold, once loaded or created.
	run *contract.Run
}

// load returns the execution's state from the cache, or decodes it from the
// file and caches it. A state from either has empty processed-id maps:
// record fills them with the ids each record needs.
func (a *applier) load(id string) (*pending, error) {
	if p, ok := a.touched[id]; ok {
		return p, nil
	}
	p := &pending{}
	if s, ok := a.db.states.get(id); ok {
		p.state = s
	} else if v := a.execs.Get([]byte(id)); v != nil {
		s := &execution.State{}
		if err := json.Unmarshal(v, s); err != nil {
			return nil, corrupt(a.db.cfg.Path, fmt.Sprintf("execution %q does not decode", id), err)
		}
		emptyProcessed(s)
		p.state = s
		a.db.states.put(id, s)
	}
	if p.state != nil {
		row := rowOf(p.state)
		p.old = &row
	}
	a.touched[id] = p
	a.order = append(a.order, id)
	return p, nil
}

func (a *applier) record(e eventstore.Entry) error {
	b := e.Record.RecordBase()
	p, err := a.load(b.AgentExecutionID)
	if err != nil {
		return err
	}
	s := p.state
	if s != nil && b.JournalID == s.Journal.JournalID && b.Sequence <= s.Journal.LastSequence {
		// Already folded in: the data is ahead of the checkpoint, which
		// one transaction per batch should never allow, or the log holds
		// a duplicate. Either way there is nothing to do.
		return nil
	}
	created := s == nil
	a.hydrated = a.hydrated[:0]
	if created {
		s = &execution.State{}
	} else if err := a.hydrate(p, s, e.Record); err != nil {
		return err
	}
	items, err := s.Apply(e.Record)
	if err != nil {
		if !created {
			emptyProcessed(s)
		}
		a.db.log.Warn("skip record",
			logKeyOffset, e.Offset, logKeyKind, e.Record.Kind(), logKeyRecord, b.RecordID,
			logKeyExecution, b.AgentExecutionID, logKeyErr, err)
		return nil
	}
	if h, ok := e.Record.(*eventstore.Header); ok && h.ForkedFrom != nil {
		if err := a.inherit(s, h); err != nil {
			return err
		}
	}
	if err := a.storeProcessed(p, s); err != nil {
		return err
	}
	run, err := a.contractRun(p, b.AgentExecutionID)
	if err != nil {
		return err
	}
	run.Apply(e.Record)
	if created {
		p.state = s
		a.db.states.put(b.AgentExecutionID, s)
	}
	p.dirty = true
	if len(items) == 0 {
		return nil
	}
	if p.items == nil {
		bk, err := a.timeline.CreateBucketIfNotExists([]byte(s.ID))
		if err != nil {
			return err
		}
		// Sequences only grow, so pages can be filled completely.
		bk.FillPercent = 1.0
		p.items = bk
	}
	for i := range items {
		a.scratch = encodeItem(a.scratch[:0], &items[i])
		if err := p.items.Put(itemKey(items[i].Sequence, i), a.keep(a.scratch)); err != nil {
			return err
		}
	}
	return nil
}

// slabSize is the size of the slabs keep allocates; a larger value gets
// an allocation of its own.
const slabSize = 64 << 10

// keep returns a copy of v that stays valid until the transaction ends.
func (a *applier) keep(v []byte) []byte {
	if len(v) > slabSize/8 {
		return append([]byte(nil), v...)
	}
	if cap(a.slab)-len(a.slab) < len(v) {
		a.slab = make([]byte, 0, slabSize)
		a.db.slab = a.slab
	}
	n := len(a.slab)
	a.slab = append(a.slab, v...)
	return a.slab[n:len(a.slab):len(a.slab)]
}

// keepU64 is keep of v's big-endian bytes.
func (a *applier) keepU64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return a.keep(b[:])
}

// itemKey is the timeline key of the i-th item a record produced: its
// sequence, with the index appended for any item after the first
// (execution.State.Apply gives at most one today).
func itemKey(seq uint64, i int) []byte {
	if i == 0 {
		return u64(seq)
	}
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, seq)
	binary.BigEndian.PutUint32(k[8:], uint32(i))
	return k
}

// flush writes every execution the batch changed, with its summary and
// index entries.
func (a *applier) flush() error {
	sums := a.tx.Bucket(bucketSummaries)
	for _, id := range a.order {
		p := a.touched[id]
		if !p.dirty {
			continue
		}
		v, err := encodeState(p.state)
		if err != nil {
			return fmt.Errorf("encode execution %s: %w", id, err)
		}
		if err := a.execs.Put([]byte(id), v); err != nil {
			return err
		}
		row := rowOf(p.state)
		if v, err = json.Marshal(row); err != nil {
			return fmt.Errorf("encode summary %s: %w", id, err)
		}
		if err := sums.Put([]byte(id), v); err != nil {
			return err
		}
		if err := a.reindex(p.old, &row); err != nil {
			return err
		}
		if p.run != nil {
			if err := a.storeRun(id, p.run); err != nil {
				return err
			}
		}
	}
	return nil
}

// contractRun returns the execution's contract fold: the one cached beside
// its state, else decoded from the file the first time the batch needs it.
func (a *applier) contractRun(p *pending, id string) (*contract.Run, error) {
	if p.run != nil {
		return p.run, nil
	}
	if r, ok := a.db.states.run(id); ok {
		p.run = r
		return r, nil
	}
	r, err := loadRun(a.contract, a.db.cfg.Path, []byte(id))
	if errors.Is(err, ErrNotFound) {
		r, err = &contract.Run{}, nil
	}
	if err != nil {
		return nil, err
	}
	p.run = r
	return r, nil
}

// storeRun writes a run's head, and the list items it changed since it was
// last stored: a run's todos, approvals and checkpoints grow with its
// journal, and rewriting them all with every batch made catch-up cost
// grow with each journal's length.
func (a *applier) storeRun(id string, r *contract.Run) error {
	b, err := a.contract.CreateBucketIfNotExists([]byte(id))
	if err != nil {
		return err
	}
	v, err := json.Marshal(r.Head())
	if err != nil {
		return fmt.Errorf("encode contract run %s: %w", id, err)
	}
	if err := b.Put(keyRunHead, a.keep(v)); err != nil {
		return err
	}
	var last contract.Change
	for i, c := range r.Changes() {
		if i > 0 && c == last {
			continue
		}
		last = c
		v, err := json.Marshal(r.Item(c))
		if err != nil {
			return fmt.Errorf("encode contract run %s item %c%d: %w", id, c.Part, c.Index, err)
		}
		if err := b.Put(runItemKey(c), a.keep(v)); err != nil {
			return err
		}
	}
	r.ResetChanges()
	a.db.states.setRun(id, r)
	return nil
}

// keyRunHead is the key of a run's head in its contract bucket; items are
// keyed by runItemKey, which never starts with it.
var keyRunHead = []byte("h")

// runItemKey is an item's key: its list's part byte, then its index,
// big-endian, so a cursor reads each list in order.
func runItemKey(c contract.Change) []byte {
	k := make([]byte, 5)
	k[0] = byte(c.Part)
	binary.BigEndian.PutUint32(k[1:], uint32(c.Index))
	return k
}

// loadRun reads a run from its contract bucket: the head, then every item
// in key order. A run without a bucket is ErrNotFound.
func loadRun(contractBucket *bolt.Bucket, path string, id []byte) (*contract.Run, error) {
	r, err := loadRunHead(contractBucket, path, id)
	if err != nil {
		return nil, err
	}
	b := contractBucket.Bucket(id)
	err = b.ForEach(func(k, v []byte) error {
		if bytes.Equal(k, keyRunHead) {
			return nil
		}
		if len(k) != 5 {
			return corrupt(path, fmt.Sprintf("contract run %q has a bad key %x", id, k), nil)
		}
		if err := r.LoadItem(contract.Part(k[0]), v); err != nil {
			return corrupt(path, fmt.Sprintf("contract run %q item %x does not decode", id, k), err)
		}
		return nil
	})
	return r, err
}

// loadRunHead reads a run's head alone: the run without its lists.
func loadRunHead(contractBucket *bolt.Bucket, path string, id []byte) (*contract.Run, error) {
	b := contractBucket.Bucket(id)
	if b == nil {
		return nil, fmt.Errorf("execution %q: %w", id, ErrNotFound)
	}
	r := &contract.Run{}
	if err := json.Unmarshal(b.Get(keyRunHead), r); err != nil {
		return nil, corrupt(path, fmt.Sprintf("contract run %q has no head that decodes", id), err)
	}
	return r, nil
}

// encodeState is the stored form of a state: without its timeline, which
// is paged from the timeline bucket, and without its processed ids and
// decisions, which are in the processed bucket.
func encodeState(s *execution.State) ([]byte, error) {
	stored := *s
	stored.Timeline = nil
	stored.ProcessedMessages, stored.ProcessedObservations, stored.Decisions = nil, nil, nil
	return json.Marshal(&stored)
}

// reindex moves an execution's index entries from the old summary (nil for
// a new execution) to the new one.
func (a *applier) reindex(old, cur *summaryRow) error {
	for _, ix := range indexes {
		k := ix.key(cur)
		if old != nil {
			ok := ix.key(old)
			if string(ok) == string(k) {
				continue
			}
			if err := a.tx.Bucket(ix.bucket).Delete(ok); err != nil {
				return err
			}
		}
		if err := a.tx.Bucket(ix.bucket).Put(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// index is one secondary index: a bucket of composite keys
// <value> \x00 <execution id> with empty values.
type index struct {
	bucket []byte
	key    func(r *summaryRow) []byte
}

var indexes = []index{
	{bucketByOwner, func(r *summaryRow) []byte { return indexKey(ownerPrefix(r.OwnerEntity, r.OwnerID), r.ID) }},
	{bucketByLifecycle, func(r *summaryRow) []byte { return indexKey(valuePrefix(string(r.Lifecycle)), r.ID) }},
	{bucketByAttention, func(r *summaryRow) []byte { return indexKey(valuePrefix(string(r.Attention)), r.ID) }},
	{bucketBySession, func(r *summaryRow) []byte { return indexKey(valuePrefix(r.SessionID), r.ID) }},
}

func indexKey(prefix []byte, id string) []byte {
	return append(prefix, id...)
}

func valuePrefix(v string) []byte {
	return append([]byte(v), 0)
}

// ownerPrefix is ownerEntity \x00 escaped ownerId \x00, or ownerEntity \x00
// for every owner of the entity when ownerID is "". The owner id is escaped
// (eventstore.EscapeID never yields \x00) so that the prefix of one owner
// never matches another's.
func ownerPrefix(owner eventstore.OwnerEntity, ownerID string) []byte {
	k := append([]byte(owner), 0)
	if ownerID == "" {
		return k
	}
	esc, err := eventstore.EscapeID(ownerID)
	if err != nil {
		// Only ids that are empty or too long fail, and records carrying
		// them never decode; keep such an id apart from every valid one.
		esc = "!" + fmt.Sprintf("%x", ownerID)
	}
	k = append(k, esc...)
	return append(k, 0)
}
