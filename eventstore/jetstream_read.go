package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// Head implements Store.
func (s *JetStreamStore) Head(ctx context.Context, ref Reference) (Reference, error) {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return ref, err
	}
	seq, _, _, err := s.headWaiting(ctx, subj)
	if err != nil {
		return ref, fmt.Errorf("head of %s: %w", ref, err)
	}
	if seq == 0 {
		return ref, fmt.Errorf("head of %s: %w", ref, ErrJournalNotFound)
	}
	ref.RecordCount, ref.LastSequence = seq, seq
	return ref, nil
}

// ReadJournal implements Store.
func (s *JetStreamStore) ReadJournal(ctx context.Context, ref Reference, fromSeq uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		ref, subj, err := s.resolve(ref)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		lastSeq, lastOffset, _, err := s.headWaiting(ctx, subj)
		switch {
		case err != nil:
			yield(Entry{}, fmt.Errorf("read %s: %w", ref, err))
			return
		case lastSeq == 0:
			yield(Entry{}, fmt.Errorf("read %s: %w", ref, ErrJournalNotFound))
			return
		case fromSeq > lastSeq:
			return
		}
		start := uint64(1)
		if fromSeq > 1 {
			if start, err = s.offsetOf(ctx, subj, fromSeq, lastOffset); err != nil {
				yield(Entry{}, fmt.Errorf("read %s: %w", ref, err))
				return
			}
		}
		// A journal's sequence has no holes by construction; a hole means
		// records were lost from the log, and a reader must not take what
		// is left for the whole journal.
		next, stopped := max(fromSeq, 1), false
		gap := func(found uint64) {
			stopped = true
			yield(Entry{}, fmt.Errorf("read %s: %w", ref, &GapError{Journal: ref.JournalID, AgentExecutionID: ref.AgentExecutionID, From: next, To: found - 1}))
		}
		var lag outage
		for {
			read := false
			s.scan(ctx, []string{subj}, start, lastOffset, func(e Entry, err error) bool {
				if e.Offset > 0 {
					start, read = e.Offset+1, true
				}
				if err != nil || e.Record == nil {
					// An undecodable record still holds its place.
					next++
					stopped = !yield(e, err)
					return !stopped
				}
				if seq := e.Record.RecordBase().Sequence; seq != next {
					gap(max(seq, next+1))
					return false
				}
				next++
				stopped = !yield(e, nil)
				return !stopped
			})
			if stopped || next > lastSeq {
				return
			}
			// The head came from the leader, but the reading consumer
			// may sit on a replica that has not applied the newest
			// records yet and ends the read at its own last one: wait
			// for it, rather than call the rest missing. What no replica
			// brings within UnavailableWait is missing.
			if !s.replicated() || ctx.Err() != nil {
				break
			}
			if read {
				lag = outage{}
			}
			if s.waitUnavailable(ctx, &lag, errReplicaBehind) != nil {
				break
			}
		}
		if !stopped {
			gap(lastSeq + 1)
		}
	}
}

// offsetOf finds the log offset of journal sequence seq by binary search
// over offsets: each probe is one direct get of the next record on the
// subject, so a read from the middle of a long journal costs O(log n) gets.
func (s *JetStreamStore) offsetOf(ctx context.Context, subj string, seq, lastOffset uint64) (uint64, error) {
	lo, hi := uint64(1), lastOffset
	found := lastOffset
	for lo <= hi {
		mid := lo + (hi-lo)/2
		m, err := s.get(ctx, msgGet{Seq: mid, NextFor: subj})
		if err != nil {
			return 0, fmt.Errorf("find sequence %d: %w", seq, err)
		}
		var peek struct {
			Sequence uint64 `json:"sequence"`
		}
		if err := json.Unmarshal(m.Data, &peek); err != nil {
			return 0, fmt.Errorf("record at offset %d: %w", m.Sequence, err)
		}
		if peek.Sequence >= seq {
			found = min(found, m.Sequence)
			if mid == 1 {
				break
			}
			hi = mid - 1
		} else {
			lo = m.Sequence + 1
		}
	}
	return found, nil
}

// scan yields the records on subjects from offset start to end (inclusive)
// through an ordered consumer. Decoding is most of a read's cost, so
// batches of messages are decoded on every core while the next ones arrive,
// and handed to yield in log order.
func (s *JetStreamStore) scan(ctx context.Context, subjects []string, start, end uint64, yield func(Entry, error) bool) {
	// Nothing pending ends the read too: a log that lost its newest
	// records (a damaged file) may still count end as its last sequence.
	r, err := s.readChunks(ctx, subjects, start, 1000, "read log", func(offset, pending uint64) (bool, bool) {
		return false, offset >= end || pending == 0
	})
	if err != nil {
		yield(Entry{}, err)
		return
	}
	defer r.close()
	for {
		b, ok := r.next()
		if !ok {
			return
		}
		for i, off := range b.offsets {
			if !yield(Entry{Offset: off, Record: b.records[i]}, b.errs[i]) {
				return
			}
		}
		if b.err != nil {
			yield(Entry{}, b.err)
			return
		}
	}
}

// ReadLog implements Store.
func (s *JetStreamStore) ReadLog(ctx context.Context, fromOffset uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if s.closed.Load() {
			yield(Entry{}, ErrClosed)
			return
		}
		info, err := s.stream.Info(ctx)
		if err != nil {
			yield(Entry{}, fmt.Errorf("read log: %w", err))
			return
		}
		last := info.State.LastSeq
		if fromOffset == 0 {
			fromOffset = 1
		}
		if info.State.Msgs == 0 || fromOffset > last {
			return
		}
		s.scan(ctx, []string{s.cfg.SubjectPrefix + ".>"}, fromOffset, last, yield)
	}
}

// LastOffset returns the offset of the newest record in the log, 0 if empty.
//
// That is the newest record the log holds, not the stream's last sequence:
// once a damaged file lost the newest records, the stream may still count
// their sequences, and a reader waiting for them would wait forever.
func (s *JetStreamStore) LastOffset(ctx context.Context) (uint64, error) {
	if s.closed.Load() {
		return 0, ErrClosed
	}
	m, err := s.get(ctx, msgGet{LastFor: s.cfg.SubjectPrefix + ".>"})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// Journals implements Store.
func (s *JetStreamStore) Journals(ctx context.Context) ([]Reference, error) {
	return s.journalsMatching(ctx, s.cfg.SubjectPrefix+".>")
}

func (s *JetStreamStore) journalsMatching(ctx context.Context, filter string) ([]Reference, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("list journals: %w", err)
	}
	refs := make([]Reference, 0, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		ref, err := ParseSubject(s.cfg.SubjectPrefix, subj)
		if err != nil {
			return nil, fmt.Errorf("list journals: %w", err)
		}
		ref.RecordCount, ref.LastSequence = n, n
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, compareRefs)
	return refs, nil
}

func compareRefs(a, b Reference) int {
	if c := cmpString(string(a.OwnerEntity), string(b.OwnerEntity)); c != 0 {
		return c
	}
	if c := cmpString(a.OwnerID, b.OwnerID); c != 0 {
		return c
	}
	return cmpString(a.AgentExecutionID, b.AgentExecutionID)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Lookup implements Store.
func (s *JetStreamStore) Lookup(ctx context.Context, agentExecutionID string) (Reference, error) {
	esc, err := EscapeID(agentExecutionID)
	if err != nil {
		return Reference{}, fmt.Errorf("look up %q: %w", agentExecutionID, err)
	}
	refs, err := s.journalsMatching(ctx, s.cfg.SubjectPrefix+".*.*."+esc)
	if err != nil {
		return Reference{}, err
	}
	return pickOne(agentExecutionID, refs)
}

func pickOne(id string, refs []Reference) (Reference, error) {
	switch len(refs) {
	case 0:
		return Reference{}, fmt.Errorf("%w: no journal for agent execution %q", ErrJournalNotFound, id)
	case 1:
		return refs[0], nil
	}
	return Reference{}, fmt.Errorf("agent execution %q has %d journals (%s, %s …): name the owner too", id, len(refs), refs[0], refs[1])
}
