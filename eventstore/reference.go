package eventstore

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Reference identifies one journal and carries its counters. It is the
// AgentExecutionJournalReference of the spec.
type Reference struct {
	JournalID        string      `json:"journalId"`
	OwnerEntity      OwnerEntity `json:"ownerEntity"`
	OwnerID          string      `json:"ownerId"`
	AgentExecutionID string      `json:"agentExecutionId"`
	RecordCount      uint64      `json:"recordCount"`
	LastSequence     uint64      `json:"lastSequence"`
}

// NewReference builds the reference of an execution's journal, checking that
// every id can be escaped.
func NewReference(owner OwnerEntity, ownerID, agentExecutionID string) (Reference, error) {
	if err := owner.validate(); err != nil {
		return Reference{}, err
	}
	if err := checkID(ownerID); err != nil {
		return Reference{}, fmt.Errorf("owner id: %w", err)
	}
	if err := checkID(agentExecutionID); err != nil {
		return Reference{}, fmt.Errorf("agent execution id: %w", err)
	}
	return Reference{
		JournalID:        JournalIDFor(owner, ownerID, agentExecutionID),
		OwnerEntity:      owner,
		OwnerID:          ownerID,
		AgentExecutionID: agentExecutionID,
	}, nil
}

func (r Reference) String() string {
	return fmt.Sprintf("%s/%s/%s", r.OwnerEntity, r.OwnerID, r.AgentExecutionID)
}

func (r Reference) validate() error {
	want, err := NewReference(r.OwnerEntity, r.OwnerID, r.AgentExecutionID)
	if err != nil {
		return fmt.Errorf("journal reference %s: %w", r, err)
	}
	if r.JournalID != "" && r.JournalID != want.JournalID {
		return fmt.Errorf("%w: journal reference %s has journalId %q, want %q", ErrReferenceMismatch, r, r.JournalID, want.JournalID)
	}
	return nil
}

// Subject returns the log subject of the journal:
// journal.<ownerEntity>.<ownerId>.<agentExecutionId>, each token escaped.
func (r Reference) Subject(prefix string) (string, error) {
	owner, err := EscapeID(string(r.OwnerEntity))
	if err != nil {
		return "", err
	}
	oid, err := EscapeID(r.OwnerID)
	if err != nil {
		return "", fmt.Errorf("owner id: %w", err)
	}
	aid, err := EscapeID(r.AgentExecutionID)
	if err != nil {
		return "", fmt.Errorf("agent execution id: %w", err)
	}
	return prefix + "." + owner + "." + oid + "." + aid, nil
}

// ParseSubject reverses Subject.
func ParseSubject(prefix, subject string) (Reference, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return Reference{}, fmt.Errorf("%w: subject %q is not %s.<ownerEntity>.<ownerId>.<agentExecutionId>", ErrInvalidID, subject, prefix)
	}
	var ids [3]string
	for i, p := range parts {
		id, err := UnescapeID(p)
		if err != nil {
			return Reference{}, fmt.Errorf("subject %q: %w", subject, err)
		}
		ids[i] = id
	}
	return NewReference(OwnerEntity(ids[0]), ids[1], ids[2])
}

// Entry is a stored record with its position in the global log.
type Entry struct {
	// Offset is the record's position in the global log (1, 2, 3 …),
	// shared by every journal.
	Offset uint64
	Record Record
}

// Store is the journal store contract. Both the JetStream store and the
// JSONL file store implement it and pass one contract suite (storetest).
type Store interface {
	// EnsureJournal appends the header as sequence 1 of the journal, atomically:
	// of two writers creating the same journal, one wins and the other gets
	// the winner's head. A journal whose header has the same record id
	// counts as ensured; a different header is ErrJournalExists.
	EnsureJournal(ctx context.Context, ref Reference, header *Header) (Reference, error)
	// Append assigns the record the journal's next sequence and stores it.
	// Empty base fields are filled from the reference; fields that disagree
	// with it are ErrReferenceMismatch. A record whose id is already stored
	// returns the stored entry. The entry's Record is r itself when this
	// call stored it (even when a lost acknowledgement made it look again)
	// and the stored copy when the id was there before: callers tell a
	// duplicate by that identity.
	Append(ctx context.Context, ref Reference, r Record) (Entry, error)
	// ReadJournal yields the journal's records from sequence fromSeq (1 = all)
	// up to its head at the time of the call.
	ReadJournal(ctx context.Context, ref Reference, fromSeq uint64) iter.Seq2[Entry, error]
	// Head returns the reference with its current record count and last sequence.
	Head(ctx context.Context, ref Reference) (Reference, error)
	// ReadLog yields every journal's records interleaved in log order, from
	// offset fromOffset (1 = all) up to the end of the log at the time of the call.
	ReadLog(ctx context.Context, fromOffset uint64) iter.Seq2[Entry, error]
	// Journals lists every journal with its counters.
	Journals(ctx context.Context) ([]Reference, error)
	// Lookup finds a journal by its AgentExecution id.
	Lookup(ctx context.Context, agentExecutionID string) (Reference, error)
	Close() error
}

// DefaultMaxRecordSize is the default limit on one encoded record.
const DefaultMaxRecordSize = 1 << 20

// refuseHeader refuses a journal.header offered to an append: a journal
// has one header, its first record, which only EnsureJournal writes.
func refuseHeader(ref Reference, r Record) error {
	if _, ok := r.(*Header); ok {
		return fmt.Errorf("append to %s: a journal.header is written by EnsureJournal", ref)
	}
	return nil
}

// prepare fills the base fields of a record about to be appended as sequence
// seq, checks it against the reference and encodes it.
func prepare(ref Reference, r Record, seq uint64, now func() time.Time, maxSize int) ([]byte, error) {
	b := r.RecordBase()
	var mismatch []string
	fill := func(field string, dst *string, want string) {
		switch {
		case *dst == "":
			*dst = want
		case *dst != want:
			mismatch = append(mismatch, fmt.Sprintf("%s %q (journal has %q)", field, *dst, want))
		}
	}
	fill("journalId", &b.JournalID, ref.JournalID)
	fill("agentExecutionId", &b.AgentExecutionID, ref.AgentExecutionID)
	fill("ownerId", &b.OwnerID, ref.OwnerID)
	scope := string(b.Scope)
	fill("scope", &scope, string(ref.OwnerEntity))
	b.Scope = OwnerEntity(scope)
	if len(mismatch) > 0 {
		return nil, fmt.Errorf("%w %s: %s", ErrReferenceMismatch, ref, strings.Join(mismatch, ", "))
	}
	if h, ok := r.(*Header); ok && h.JournalKind == "" {
		h.JournalKind = headerKind
	}
	if b.RecordID == "" {
		key := NaturalKey(r)
		if key == "" {
			return nil, fmt.Errorf("%w: %s records have no natural key: set recordId, e.g. eventstore.RecordID(journalId, kind, <what caused it>)", ErrInvalidRecord, r.Kind())
		}
		b.RecordID = RecordID(ref.JournalID, r.Kind(), key)
	}
	if b.OccurredAt.IsZero() {
		b.OccurredAt = now().UTC()
	}
	b.Sequence = seq
	data, err := Encode(r)
	if err != nil {
		return nil, err
	}
	if maxSize > 0 && len(data) > maxSize {
		return nil, fmt.Errorf("%w: %s record %s is %d bytes (the limit is %d; keep large output in terminal recordings or files and reference it)", ErrRecordTooLarge, r.Kind(), b.RecordID, len(data), maxSize)
	}
	return data, nil
}
