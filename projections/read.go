package projections

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

const (
	// DefaultTimelineLimit is the page size of Timeline when none is given.
	DefaultTimelineLimit = 50
	// MaxTimelineLimit is the largest page Timeline returns.
	MaxTimelineLimit = 1000
)

// Execution returns the projected state of an execution, with every
// processed id and decision. Its Timeline is empty: items are paged with
// Timeline. An unknown id is ErrNotFound.
func (db *DB) Execution(id string) (*execution.State, error) {
	s := &execution.State{}
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketExecutions).Get([]byte(id))
		if v == nil {
			return fmt.Errorf("execution %q: %w", id, ErrNotFound)
		}
		if err := json.Unmarshal(v, s); err != nil {
			return corrupt(db.cfg.Path, fmt.Sprintf("execution %q does not decode", id), err)
		}
		return loadProcessed(tx, db.cfg.Path, s)
	})
	if err != nil {
		return nil, err
	}
	s.Timeline = []execution.TimelineItem{}
	return s, nil
}

// Filter selects executions for List. Every set field must match (AND);
// the zero Filter lists everything.
type Filter struct {
	// OwnerEntity and OwnerID select one owner's executions; OwnerEntity
	// alone selects every owner of that entity. OwnerID needs OwnerEntity.
	OwnerEntity eventstore.OwnerEntity
	OwnerID     string
	Lifecycle   eventstore.Lifecycle
	Attention   eventstore.Attention
	// Limit bounds the result; 0 means no limit.
	Limit int
}

func (f Filter) validate() error {
	var problems []string
	if f.OwnerEntity != "" && !slices.Contains(eventstore.OwnerEntities, f.OwnerEntity) {
		problems = append(problems, fmt.Sprintf("owner entity %q (want one of: %s)", f.OwnerEntity, join(eventstore.OwnerEntities)))
	}
	if f.OwnerID != "" && f.OwnerEntity == "" {
		problems = append(problems, fmt.Sprintf("owner id %q without an owner entity (want one of: %s)", f.OwnerID, join(eventstore.OwnerEntities)))
	}
	if f.Lifecycle != "" && !slices.Contains(eventstore.Lifecycles, f.Lifecycle) {
		problems = append(problems, fmt.Sprintf("lifecycle %q (want one of: %s)", f.Lifecycle, join(eventstore.Lifecycles)))
	}
	if f.Attention != "" && !slices.Contains(eventstore.Attentions, f.Attention) {
		problems = append(problems, fmt.Sprintf("attention %q (want one of: %s)", f.Attention, join(eventstore.Attentions)))
	}
	if f.Limit < 0 {
		problems = append(problems, fmt.Sprintf("limit %d (want 0 for all, or more)", f.Limit))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidFilter, strings.Join(problems, "; "))
	}
	return nil
}

func join[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}

// List returns the summaries of the executions that match f, newest update
// first (ties by id). A filtered list reads only the matching index entries
// and their summaries.
func (db *DB) List(f Filter) ([]Summary, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	var out []Summary
	err := db.view(func(tx *bolt.Tx) error {
		sums := tx.Bucket(bucketSummaries)
		var ids []string
		filtered := false
		narrow := func(bucket, prefix []byte, ownerFollows bool) {
			got := scanIndex(tx.Bucket(bucket), prefix, ownerFollows)
			if !filtered {
				ids, filtered = got, true
				return
			}
			ids = intersect(ids, got)
		}
		if f.OwnerEntity != "" {
			narrow(bucketByOwner, ownerPrefix(f.OwnerEntity, f.OwnerID), f.OwnerID == "")
		}
		if f.Lifecycle != "" {
			narrow(bucketByLifecycle, valuePrefix(string(f.Lifecycle)), false)
		}
		if f.Attention != "" {
			narrow(bucketByAttention, valuePrefix(string(f.Attention)), false)
		}
		decode := func(id, v []byte) error {
			var r summaryRow
			if err := json.Unmarshal(v, &r); err != nil {
				return corrupt(db.cfg.Path, fmt.Sprintf("summary of %q does not decode", id), err)
			}
			out = append(out, r.Summary)
			return nil
		}
		if !filtered {
			return sums.ForEach(decode)
		}
		for _, id := range ids {
			v := sums.Get([]byte(id))
			if v == nil {
				return corrupt(db.cfg.Path, fmt.Sprintf("index entry for %q without a summary", id), nil)
			}
			if err := decode([]byte(id), v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// scanIndex returns the execution ids under prefix, in key order. Under an
// owner-entity-only prefix of by-owner the key goes on with the escaped
// owner id and \x00 before the execution id; the escaped id never holds
// \x00, so the execution id is what follows the first one.
func scanIndex(b *bolt.Bucket, prefix []byte, ownerFollows bool) []string {
	var ids []string
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		rest := k[len(prefix):]
		if ownerFollows {
			if i := bytes.IndexByte(rest, 0); i >= 0 {
				rest = rest[i+1:]
			}
		}
		ids = append(ids, string(rest))
	}
	return ids
}

// intersect keeps the ids of a that are also in b.
func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, id := range b {
		in[id] = true
	}
	out := a[:0]
	for _, id := range a {
		if in[id] {
			out = append(out, id)
		}
	}
	return out
}

// Timeline returns a page of an execution's timeline, newest first, quiet
// items left out: QueryTimeline with before and limit.
func (db *DB) Timeline(id string, before uint64, limit int) (items []execution.TimelineItem, next uint64, err error) {
	return db.QueryTimeline(id, TimelineQuery{Before: before, Limit: limit})
}

// TimelineQuery selects a page of a timeline.
type TimelineQuery struct {
	// Before is the cursor: the page holds items whose Sequence is below
	// it; 0 gives the newest items.
	Before uint64
	// Limit is the most items in the page: DefaultTimelineLimit when 0 or
	// less, at most MaxTimelineLimit.
	Limit int
	// All includes the quiet items (execution.TimelineItem.Quiet), which a
	// page leaves out otherwise.
	All bool
}

// QueryTimeline returns a page of an execution's timeline, newest first:
// up to q.Limit items whose Sequence is below q.Before, the quiet ones
// left out unless q.All. next is the Before of the following, older page,
// and 0 when there is none. An unknown id is ErrNotFound.
func (db *DB) QueryTimeline(id string, q TimelineQuery) (items []execution.TimelineItem, next uint64, err error) {
	before, limit := q.Before, q.Limit
	switch {
	case limit <= 0:
		limit = DefaultTimelineLimit
	case limit > MaxTimelineLimit:
		limit = MaxTimelineLimit
	}
	err = db.view(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketExecutions).Get([]byte(id)) == nil {
			return fmt.Errorf("execution %q: %w", id, ErrNotFound)
		}
		b := tx.Bucket(bucketTimeline).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if before == 0 {
			k, v = c.Last()
		} else {
			// Seek lands on the first key >= before (or past the end);
			// the page starts just below it.
			if k, _ = c.Seek(u64(before)); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			seq := binary.BigEndian.Uint64(k[:8])
			// A page never splits the items of one record, so the next
			// page's "before" skips none.
			if len(items) >= limit && seq != items[len(items)-1].Sequence {
				next = items[len(items)-1].Sequence
				break
			}
			it, err := decodeItem(seq, v)
			if err != nil {
				return corrupt(db.cfg.Path, fmt.Sprintf("timeline item %x of %q does not decode", k, id), err)
			}
			if !q.All && it.Quiet() {
				continue
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if items == nil {
		items = []execution.TimelineItem{}
	}
	return items, next, nil
}

// JournalsByOwner returns the journal references of an owner's executions
// with their counters, by execution id. An empty ownerID selects every owner
// of the entity.
func (db *DB) JournalsByOwner(owner eventstore.OwnerEntity, ownerID string) ([]eventstore.Reference, error) {
	if !slices.Contains(eventstore.OwnerEntities, owner) {
		return nil, fmt.Errorf("%w: owner entity %q (want one of: %s)", ErrInvalidFilter, owner, join(eventstore.OwnerEntities))
	}
	var refs []eventstore.Reference
	err := db.view(func(tx *bolt.Tx) error {
		sums := tx.Bucket(bucketSummaries)
		for _, id := range scanIndex(tx.Bucket(bucketByOwner), ownerPrefix(owner, ownerID), ownerID == "") {
			v := sums.Get([]byte(id))
			if v == nil {
				return corrupt(db.cfg.Path, fmt.Sprintf("index entry for %q without a summary", id), nil)
			}
			var r summaryRow
			if err := json.Unmarshal(v, &r); err != nil {
				return corrupt(db.cfg.Path, fmt.Sprintf("summary of %q does not decode", id), err)
			}
			refs = append(refs, r.reference())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}
