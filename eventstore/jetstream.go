package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
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
	if cfg.SubjectPrefix == "" {
		cfg.SubjectPrefix = "journal"
	}
	if cfg.MaxRecordSize == 0 {
		cfg.MaxRecordSize = DefaultMaxRecordSize
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = 50
	}
	if cfg.UnavailableWait == 0 {
		cfg.UnavailableWait = DefaultUnavailableWait
	}
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
	if _, ok := r.(*Header); ok {
		return Entry{}, fmt.Errorf("append to %s: a journal.header is written by EnsureJournal", ref)
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
		if _, ok := r.(*Header); ok {
			return nil, fmt.Errorf("append to %s: a journal.header is written by EnsureJournal", ref)
		}
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
				return e, nil
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
				// what is stored.
				j.known = false
				return s.entryAt(ctx, ack.Sequence)
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

// backoff waits a random, growing time before retrying a lost race, so that
// a writer with a warm head cache does not win every race against a cold one.
func backoff(ctx context.Context, attempt int) error {
	limit := min(time.Duration(attempt)*250*time.Microsecond, 20*time.Millisecond)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// ErrUnavailable reports a log that did not answer for UnavailableWait: a
// cluster without a majority, a server that stays down. What was asked may
// or may not have been done.
var ErrUnavailable = errors.New("eventstore: unavailable")

// DefaultUnavailableWait is how long an append waits for a log that does
// not answer: longer than a cluster takes to elect a new leader, and than a
// client takes to reconnect to a restarted server.
const DefaultUnavailableWait = 15 * time.Second

// unavailable reports an error of a log that exists but cannot answer for a
// moment: no server responds on the subject, a request timed out (ctx
// itself has not ended), the connection is being re-established, or the
// server says it is temporarily unavailable (503). A closed connection is
// not: it was closed on purpose, or gave up reconnecting.
func unavailable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// outage is the span of one append during which the log did not answer.
type outage struct {
	since time.Time
	delay time.Duration
}

// waitUnavailable returns err unless it says the log cannot answer for the
// moment; then it waits (50 ms, doubling up to a second) and returns nil
// for the caller to try again, until the outage has lasted UnavailableWait.
func (s *JetStreamStore) waitUnavailable(ctx context.Context, o *outage, err error) error {
	if !unavailable(ctx, err) {
		return err
	}
	now := time.Now()
	if o.since.IsZero() {
		o.since, o.delay = now, 50*time.Millisecond
	}
	if now.Sub(o.since) >= s.cfg.UnavailableWait {
		return fmt.Errorf("%w: the log has not answered for %s: %w", ErrUnavailable, s.cfg.UnavailableWait.Round(time.Second), err)
	}
	t := time.NewTimer(o.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	o.delay = min(2*o.delay, time.Second)
	return nil
}

// lostAck reports a publish whose outcome is unknown: the server may have
// stored the message without the ack reaching us.
func lostAck(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting)
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

// waiting runs fn again while its error says the log cannot answer for the
// moment, as appends do, up to UnavailableWait.
func (s *JetStreamStore) waiting(ctx context.Context, fn func() error) error {
	var down outage
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if werr := s.waitUnavailable(ctx, &down, err); werr != nil {
			return werr
		}
	}
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

// attemptTimeout bounds one publish or message get, whatever the caller's
// deadline. A request to a stream whose leader just died is answered by
// no one, and waiting the caller's whole deadline (or the client's 5s
// default, twice) for it made appends and decisions pause for 10 to 30s
// after a cluster lost a node, where a new leader is elected within about
// 9s. A request that times out is tried again, and an append first looks
// for its record, so a slow answer costs a retry, not a duplicate.
const attemptTimeout = 2 * time.Second

// replicated reports whether the stream keeps more than one copy, as it
// was configured when the store opened.
func (s *JetStreamStore) replicated() bool {
	info := s.stream.CachedInfo()
	return info != nil && info.Config.Replicas > 1
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
