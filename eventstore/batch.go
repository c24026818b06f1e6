package eventstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of an atomic batch publish: the stream stores every message of a
// batch, or none, once the last one carries the commit.
const (
	batchIDHeader       = "Nats-Batch-Id"
	batchSequenceHeader = "Nats-Batch-Sequence"
	batchCommitHeader   = "Nats-Batch-Commit"
)

// batchFlushEvery bounds how many batch messages are buffered before the
// connection is flushed, so a long batch does not outrun the server.
const batchFlushEvery = 256

// batchFlushTimeout bounds each of those flushes when the caller's context
// has no deadline: a connection's flush needs one.
const batchFlushTimeout = 30 * time.Second

// ErrBatchTooLarge reports a batch over the log's limit of records in one
// atomic write.
var ErrBatchTooLarge = errors.New("too many records for one atomic write")

// AppendBatch appends records, which carry their own sequences, ids and
// times (a journal restored from an export), to the journal of ref as one
// atomic write: a reader, another writer or a crash sees all of them or
// none. The first must follow the journal's last record (the header, at
// sequence 1, for a journal not stored yet) and the others must follow it
// without gaps. Another writer appending first fails the batch with
// ErrConflict and writes nothing.
func (s *JetStreamStore) AppendBatch(ctx context.Context, ref Reference, records []Record) error {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	if err := s.Refused(ref); err != nil {
		return fmt.Errorf("append batch to %s: %w", ref, err)
	}
	j := s.journal(ref.JournalID)
	j.mu.Lock()
	defer j.mu.Unlock()
	// Whatever happens, the next append reads the head again.
	defer func() { j.known = false }()
	lastSeq, lastOffset, _, err := s.head(ctx, subj)
	if err != nil {
		return fmt.Errorf("append batch to %s: read head: %w", ref, err)
	}
	msgs := make([]*nats.Msg, len(records))
	for i, r := range records {
		seq := lastSeq + uint64(i) + 1
		_, isHeader := r.(*Header)
		switch {
		case isHeader != (seq == 1):
			return fmt.Errorf("append batch to %s: record %d is a %s at sequence %d (a journal starts with its header, and has one)", ref, i+1, r.Kind(), seq)
		case r.RecordBase().Sequence != seq:
			return fmt.Errorf("append batch to %s: record %d has sequence %d, want %d (the journal holds %d records)", ref, i+1, r.RecordBase().Sequence, seq, lastSeq)
		}
		data, err := prepare(ref, r, seq, s.cfg.Now, s.cfg.MaxRecordSize)
		if err != nil {
			return fmt.Errorf("append batch to %s: record %d: %w", ref, i+1, err)
		}
		m := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, r.RecordBase().RecordID)
		m.Header.Set(batchSequenceHeader, strconv.Itoa(i+1))
		if i == 0 {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(lastOffset, 10))
		}
		msgs[i] = m
	}
	id := "batch-" + rand.Text()
	for _, m := range msgs {
		m.Header.Set(batchIDHeader, id)
	}
	nc := s.js.Conn()
	for i, m := range msgs[:len(msgs)-1] {
		if err := nc.PublishMsg(m); err != nil {
			return fmt.Errorf("append batch to %s: %w", ref, err)
		}
		if (i+1)%batchFlushEvery == 0 {
			if err := flushBatch(ctx, nc); err != nil {
				return fmt.Errorf("append batch to %s: %w", ref, err)
			}
		}
	}
	last := msgs[len(msgs)-1]
	last.Header.Set(batchCommitHeader, "1")
	_, err = s.js.PublishMsg(ctx, last)
	var apiErr *jetstream.APIError
	switch {
	case err == nil:
		return nil
	case lostAck(err):
		// The outcome is unknown: the batch landed if the journal now ends
		// with its last record.
		_, _, msgID, herr := s.head(ctx, subj)
		if herr == nil && msgID == records[len(records)-1].RecordBase().RecordID {
			return nil
		}
	case wrongLastSequence(err):
		return fmt.Errorf("append batch to %s: %w", ref, &ConflictError{JournalID: ref.JournalID, Expected: lastSeq, Attempts: 1})
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.ErrorCode(10199):
		return fmt.Errorf("append batch to %s: %w (%d records; %v)", ref, ErrBatchTooLarge, len(records), err)
	}
	return fmt.Errorf("append batch to %s: %w", ref, err)
}

// flushBatch waits until the server has read what was published so far.
func flushBatch(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, batchFlushTimeout)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}
