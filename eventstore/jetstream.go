package eventstore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStreamConfig configures a JetStreamStore.
type JetStreamConfig struct {
	// Stream is the journal stream's name. Required.
	Stream string
	// SubjectPrefix is the first subject token; "journal" when empty.
	SubjectPrefix string
	// MaxRecordSize bounds one encoded record; DefaultMaxRecordSize when 0.
	MaxRecordSize int
	// MaxAttempts bounds the retries of one append that keeps losing the
	// race for the next sequence; 50 when 0.
	MaxAttempts int
	// UnavailableWait is how long an append waits for a log that does not
	// answer (a cluster electing a leader, a server restarting, a lost
	// connection) before it fails; DefaultUnavailableWait when 0.
	UnavailableWait time.Duration
	// Now is the clock for occurredAt; time.Now when nil.
	Now func() time.Time
	// Refuse, when set, is asked before every write to a journal (an
	// append, or the header of EnsureJournal); a non-nil answer refuses
	// the write and is returned, wrapped. It is how the journals found
	// damaged take no more records from any writer of this store: the
	// error should match ErrDamaged.
	Refuse func(Reference) error
}

// JetStreamStore keeps every journal in one JetStream stream, one subject
// per journal. A journal's sequence is its count of messages on its subject;
// the stream sequence is the record's log offset.
type JetStreamStore struct {
	js jetstream.JetStream
	// pub publishes appends and durable waits until what pub published is
	// on disk: on a log whose publishes wait for the disk themselves (a
	// group commit, see groupCommitter), an append of several records
	// publishes each without waiting and waits once.
	pub     jetstream.JetStream
	durable func(context.Context) error
	stream  jetstream.Stream
	cfg     JetStreamConfig
	closed  atomic.Bool
	// apiPrefix starts the subjects of JetStream API requests made here.
	apiPrefix string

	mu       sync.Mutex
	journals map[string]*jsJournal
}

// jsJournal caches a journal's head so that a single writer appends without
// reading the head first. Appends to one journal from this process are
// serialized by mu; other processes are caught by the expected-last-subject-
// sequence check.
type jsJournal struct {
	mu         sync.Mutex
	known      bool
	lastSeq    uint64
	lastOffset uint64
}

var _ Store = (*JetStreamStore)(nil)

// OpenJetStream returns a store over an existing journal stream.
func OpenJetStream(ctx context.Context, js jetstream.JetStream, cfg JetStreamConfig) (*JetStreamStore, error) {
	if cfg.Stream == "" {
		return nil, errors.New("open journal store: stream name is required")
	}
	cfg.SubjectPrefix = cmp.Or(cfg.SubjectPrefix, "journal")
	cfg.MaxRecordSize = cmp.Or(cfg.MaxRecordSize, DefaultMaxRecordSize)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 50)
	cfg.UnavailableWait = cmp.Or(cfg.UnavailableWait, DefaultUnavailableWait)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("open journal store: stream %s: %w", cfg.Stream, err)
	}
	s := &JetStreamStore{js: js, pub: js, durable: func(context.Context) error { return nil },
		stream: st, cfg: cfg, apiPrefix: apiPrefix(js.Options()), journals: map[string]*jsJournal{}}
	if gc, ok := js.(groupCommitter); ok {
		s.pub, s.durable = gc.Unsynced(), gc.WaitDurable
	}
	return s, nil
}

// groupCommitter is a JetStream API whose publishes return once their
// message is on disk, sharing the fsync with concurrent ones (the bus's
// group commit on an embedded node), with the publishes that do not wait
// and the wait itself, so that several publishes share one wait.
type groupCommitter interface {
	Unsynced() jetstream.JetStream
	WaitDurable(ctx context.Context) error
}

// apiPrefix returns the subject prefix of the JetStream API js talks to.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// Close marks the store closed. The connection belongs to the caller.
func (s *JetStreamStore) Close() error {
	s.closed.Store(true)
	return nil
}

func (s *JetStreamStore) journal(id string) *jsJournal {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.journals[id]
	if !ok {
		j = &jsJournal{}
		s.journals[id] = j
	}
	return j
}

// resolve checks a reference and returns it with its journal id and subject.
func (s *JetStreamStore) resolve(ref Reference) (Reference, string, error) {
	if s.closed.Load() {
		return ref, "", ErrClosed
	}
	if err := ref.validate(); err != nil {
		return ref, "", err
	}
	ref.JournalID = JournalIDFor(ref.OwnerEntity, ref.OwnerID, ref.AgentExecutionID)
	subj, err := ref.Subject(s.cfg.SubjectPrefix)
	return ref, subj, err
}

// EnsureJournal implements Store.
func (s *JetStreamStore) EnsureJournal(ctx context.Context, ref Reference, h *Header) (Reference, error) {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return ref, err
	}
	if h.RecordID == "" {
		h.RecordID = RecordID(ref.JournalID, KindHeader, NaturalKey(h))
	}
	if err := CheckLinks(ctx, s, h); err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	if err := s.Refused(ref); err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	j := s.journal(ref.JournalID)
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := s.appendLocked(ctx, j, ref, subj, h); err != nil {
		if !errors.Is(err, errHasHeader) {
			return ref, err
		}
		first, err := s.firstRecord(ctx, subj)
		if err != nil {
			return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
		}
		if first.RecordBase().RecordID != h.RecordID {
			return ref, fmt.Errorf("ensure journal %s: %w with header %s (this one is %s)", ref, ErrJournalExists, first.RecordBase().RecordID, h.RecordID)
		}
	}
	// The header found may be another call's, stored and not yet synced.
	if err := s.durable(ctx); err != nil {
		return ref, fmt.Errorf("ensure journal %s: %w", ref, err)
	}
	return s.Head(ctx, ref)
}

// Refused returns why a write to ref would be refused (JetStreamConfig.Refuse),
// nil when it would not: a writer that must not even start on a damaged
// journal (the recovery of a run) asks first.
func (s *JetStreamStore) Refused(ref Reference) error {
	if s.cfg.Refuse == nil {
		return nil
	}
	return s.cfg.Refuse(ref)
}

// errReplicaBehind is internal: a replica has not yet applied records the
// leader acknowledged.
var errReplicaBehind = fmt.Errorf("a replica is behind the leader: %w", nats.ErrTimeout)

// errHasHeader is internal: the journal already has its header.
var errHasHeader = errors.New("journal has a header")

// Append implements Store.
func (s *JetStreamStore) Append(ctx context.Context, ref Reference, r Record) (Entry, error) {
	e, err := s.AppendPending(ctx, ref, r)
	if err != nil {
		return Entry{}, err
	}
	if err := s.durable(ctx); err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	return e, nil
}

// AppendPending appends r as Append does, but returns once the log has
// stored it, without waiting for it to reach the disk (WaitDurable does).
// It is for a caller whose answer waits for a later record that is
// durable, such as the policy's decision on an observation: the log is
// durable in order, so once a record is on disk every record stored
// before it is. A caller that answers without such a record calls
// WaitDurable first.
func (s *JetStreamStore) AppendPending(ctx context.Context, ref Reference, r Record) (Entry, error) {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return Entry{}, err
	}
	if err := refuseHeader(ref, r); err != nil {
		return Entry{}, err
	}
	if err := s.Refused(ref); err != nil {
		return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
	}
	j := s.journal(ref.JournalID)
	j.mu.Lock()
	defer j.mu.Unlock()
	return s.appendLocked(ctx, j, ref, subj, r)
}

// WaitDurable returns once every record stored before the call is on
// disk: at once where the server syncs each write itself or the log is
// not synced on each append (--sync interval).
func (s *JetStreamStore) WaitDurable(ctx context.Context) error {
	if err := s.durable(ctx); err != nil {
		return fmt.Errorf("wait for the log to reach the disk: %w", err)
	}
	return nil
}

// AppendAll appends records to one journal, one after the other as Append
// appends each, and returns once all of them are stored and durable: on a
// group-committed log it waits for the disk once, for the last, instead of
// once for each. A failure leaves the records before the failed one
// appended, as many Appends would; the entries returned are theirs.
func (s *JetStreamStore) AppendAll(ctx context.Context, ref Reference, recs []Record) ([]Entry, error) {
	ref, subj, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := refuseHeader(ref, r); err != nil {
			return nil, err
		}
	}
	if err := s.Refused(ref); err != nil {
		return nil, fmt.Errorf("append to %s: %w", ref, err)
	}
	j := s.journal(ref.JournalID)
	j.mu.Lock()
	defer j.mu.Unlock()
	entries := make([]Entry, 0, len(recs))
	for _, r := range recs {
		e, err := s.appendLocked(ctx, j, ref, subj, r)
		if err != nil {
			// What was appended before stays; make it as durable as
			// Appends would have.
			return entries, errors.Join(err, s.durable(ctx))
		}
		entries = append(entries, e)
	}
	if err := s.durable(ctx); err != nil {
		return entries, fmt.Errorf("append to %s: %w", ref, err)
	}
	return entries, nil
}

func (s *JetStreamStore) appendLocked(ctx context.Context, j *jsJournal, ref Reference, subj string, r Record) (Entry, error) {
	_, isHeader := r.(*Header)
	// uncertainSince is set after a publish whose outcome is unknown (a lost
	// ack): the record may be stored at an offset after it.
	var uncertainSince uint64
	var recordID string
	var down outage
	// attempt counts the races lost (or acks lost); waiting out an outage
	// spends none.
	for attempt := 1; ; {
		if !j.known {
			seq, off, _, err := s.head(ctx, subj)
			if err != nil {
				if werr := s.waitUnavailable(ctx, &down, err); werr != nil {
					return Entry{}, fmt.Errorf("append to %s: read head: %w", ref, werr)
				}
				continue
			}
			j.lastSeq, j.lastOffset, j.known = seq, off, true
		}
		if uncertainSince > 0 {
			// An earlier attempt's outcome is unknown: the record may
			// already be in the journal.
			e, ok, err := s.findRecord(ctx, subj, uncertainSince, recordID)
			switch {
			case err != nil:
				if werr := s.waitUnavailable(ctx, &down, err); werr != nil {
					return Entry{}, fmt.Errorf("append to %s: %w", ref, werr)
				}
				continue
			case ok:
				return own(e, r), nil
			}
		}
		switch {
		case isHeader && j.lastSeq > 0:
			return Entry{}, errHasHeader
		case !isHeader && j.lastSeq == 0:
			return Entry{}, fmt.Errorf("append to %s: %w (ensure the journal with its header first)", ref, ErrJournalNotFound)
		}
		data, err := prepare(ref, r, j.lastSeq+1, s.cfg.Now, s.cfg.MaxRecordSize)
		if err != nil {
			return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
		}
		recordID = r.RecordBase().RecordID
		msg := &nats.Msg{Subject: subj, Data: data, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, recordID)
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(j.lastOffset, 10))
		pctx, cancel := context.WithTimeout(ctx, attemptTimeout)
		ack, err := s.pub.PublishMsg(pctx, msg)
		cancel()
		if err == nil {
			if ack.Duplicate {
				// Stored before, within the duplicate window: hand back
				// what is stored. Stored at or after an attempt of this
				// call whose ack was lost, it is this call's own record.
				j.known = false
				e, err := s.entryAt(ctx, ack.Sequence)
				if err == nil && uncertainSince > 0 && ack.Sequence >= uncertainSince {
					e = own(e, r)
				}
				return e, err
			}
			j.lastSeq++
			j.lastOffset = ack.Sequence
			return Entry{Offset: ack.Sequence, Record: r}, nil
		}
		j.known = false
		switch {
		case wrongLastSequence(err):
			// Another writer appended first; reload the head and retry.
		case ctx.Err() != nil:
			return Entry{}, fmt.Errorf("append to %s: %w", ref, ctx.Err())
		case lostAck(err):
			if uncertainSince == 0 {
				uncertainSince = j.lastOffset + 1
			}
			if unavailable(ctx, err) {
				// Not a lost race: wait for the log instead of spending
				// the attempts.
				if werr := s.waitUnavailable(ctx, &down, err); werr != nil {
					return Entry{}, fmt.Errorf("append to %s: %w", ref, werr)
				}
				continue
			}
		default:
			return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
		}
		if attempt >= s.cfg.MaxAttempts {
			return Entry{}, fmt.Errorf("append to %s: %w", ref, &ConflictError{JournalID: ref.JournalID, Expected: j.lastSeq, Attempts: attempt})
		}
		if err := backoff(ctx, attempt); err != nil {
			return Entry{}, fmt.Errorf("append to %s: %w", ref, err)
		}
		attempt++
	}
}

// head returns the journal sequence, log offset and record id of the last
// record on a subject; zeros for an empty journal. It does not wait out an
// outage: appends wait around it, reads use headWaiting.
func (s *JetStreamStore) head(ctx context.Context, subj string) (seq, offset uint64, msgID string, err error) {
	m, err := s.getOnce(ctx, msgGet{LastFor: subj})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, 0, "", nil
	}
	if err != nil {
		return 0, 0, "", err
	}
	var peek struct {
		Sequence uint64 `json:"sequence"`
	}
	if err := json.Unmarshal(m.Data, &peek); err != nil {
		return 0, 0, "", fmt.Errorf("record at offset %d: %w", m.Sequence, err)
	}
	return peek.Sequence, m.Sequence, m.Header.Get(jetstream.MsgIDHeader), nil
}

// headWaiting is head, waiting while the log cannot answer.
func (s *JetStreamStore) headWaiting(ctx context.Context, subj string) (seq, offset uint64, msgID string, err error) {
	err = s.waiting(ctx, func() error {
		seq, offset, msgID, err = s.head(ctx, subj)
		return err
	})
	return seq, offset, msgID, err
}

// findRecord looks for a record id among the journal's records from offset
// from, for retries whose earlier attempt may have been stored.
func (s *JetStreamStore) findRecord(ctx context.Context, subj string, from uint64, id string) (Entry, bool, error) {
	for off := from; ; {
		m, err := s.getOnce(ctx, msgGet{Seq: off, NextFor: subj})
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return Entry{}, false, nil
		}
		if err != nil {
			return Entry{}, false, err
		}
		if m.Header.Get(jetstream.MsgIDHeader) == id {
			return decodeEntry(m)
		}
		off = m.Sequence + 1
	}
}

// msgGet asks for one message: the one at Seq, the first on subject
// NextFor at or after Seq, or the last on subject LastFor.
type msgGet struct {
	Seq     uint64 `json:"seq,omitempty"`
	LastFor string `json:"last_by_subj,omitempty"`
	NextFor string `json:"next_by_subj,omitempty"`
}

// get reads one message and says the truth about the log as acknowledged:
// a record acknowledged before the call is found. A direct get is answered
// by whichever replica of the stream the request reaches first (the local
// one, for a daemon on a cluster node), and a follower answers from what it
// has applied, which lags what the leader acknowledged, most of all while
// leadership moves: a header just written read as "journal not found", a
// record just acknowledged as "message not found". So on a replicated
// stream the stream leader answers, through the stream's message-get API; a
// single replica is always current and keeps the cheaper direct get. While
// the log does not answer (no leader yet), it waits as appends do.
func (s *JetStreamStore) get(ctx context.Context, req msgGet) (m *jetstream.RawStreamMsg, err error) {
	err = s.waiting(ctx, func() error {
		m, err = s.getOnce(ctx, req)
		return err
	})
	return m, err
}

// getOnce is get without the wait, for callers that wait themselves.
func (s *JetStreamStore) getOnce(ctx context.Context, req msgGet) (*jetstream.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	if !s.replicated() {
		switch {
		case req.LastFor != "":
			return s.stream.GetLastMsgForSubject(ctx, req.LastFor)
		case req.NextFor != "":
			return s.stream.GetMsg(ctx, req.Seq, jetstream.WithGetMsgSubject(req.NextFor))
		}
		return s.stream.GetMsg(ctx, req.Seq)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	reply, err := s.js.Conn().RequestWithContext(ctx, s.apiPrefix+"STREAM.MSG.GET."+s.cfg.Stream, body)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fmt.Errorf("message get: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return nil, jetstream.ErrMsgNotFound
	case resp.Error != nil:
		return nil, resp.Error
	case resp.Message == nil:
		return nil, errors.New("message get: an answer without a message")
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence, Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
			return nil, fmt.Errorf("message get: offset %d: %w", m.Sequence, err)
		}
	}
	return m, nil
}

func decodeEntry(m *jetstream.RawStreamMsg) (Entry, bool, error) {
	r, err := Decode(m.Data)
	if err != nil {
		return Entry{}, false, fmt.Errorf("record at offset %d: %w", m.Sequence, err)
	}
	return Entry{Offset: m.Sequence, Record: r}, true, nil
}

func (s *JetStreamStore) entryAt(ctx context.Context, offset uint64) (Entry, error) {
	m, err := s.get(ctx, msgGet{Seq: offset})
	if err != nil {
		return Entry{}, fmt.Errorf("read offset %d: %w", offset, err)
	}
	e, _, err := decodeEntry(m)
	return e, err
}

func (s *JetStreamStore) firstRecord(ctx context.Context, subj string) (Record, error) {
	m, err := s.get(ctx, msgGet{Seq: 1, NextFor: subj})
	if err != nil {
		return nil, fmt.Errorf("read header of %s: %w", subj, err)
	}
	e, _, err := decodeEntry(m)
	return e.Record, err
}

// own is the entry of a record this call stored though its ack was lost:
// the caller's record, with the base fields the store gave it, so that the
// caller sees its own record and not a duplicate (Store.Append).
func own(e Entry, r Record) Entry {
	*r.RecordBase() = *e.Record.RecordBase()
	return Entry{Offset: e.Offset, Record: r}
}
