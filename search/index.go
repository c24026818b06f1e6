package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/follower"
)

// Source is the log the index reads.
type Source = eventstore.LogSource

// ErrRebuilding reports a Rebuild started while another runs. It is the
// follower's, which runs rebuilds.
var ErrRebuilding = follower.ErrRebuilding

// catchUpBatch is how many log entries one index batch takes while
// catching up: large enough that few segments are written, small enough to
// hold in memory. The log is read in smaller batches, which an index batch
// spans. It is a variable for tests only, which make it small; an Index
// takes its value when it opens.
var catchUpBatch = 10_000

// Internal keys, stored in the index beside the documents and written in
// the same batch as them.
const (
	keyCheckpoint = "checkpoint"
	// keyAgent + execution id -> the agent of its journal header, which
	// later records do not carry.
	keyAgent = "agent/"
)

// Document fields.
const (
	fieldText        = "text"
	fieldExecution   = "execution"
	fieldSequence    = "sequence"
	fieldKind        = "kind"
	fieldOwnerEntity = "ownerEntity"
	fieldOwnerID     = "ownerId"
	fieldAgent       = "agent"
	fieldTime        = "time"
)

// Index is the full-text index, a directory. Its methods are safe for
// concurrent use; queries read while the follower writes.
type Index struct {
	path string

	// mu guards idx against Rebuild's swap: writers and the swap hold it
	// exclusively, queries share it.
	mu  sync.RWMutex
	idx bleve.Index
	// agents caches keyAgent entries.
	agents map[string]string

	// f follows the log into the index (Follow, CatchUp, Rebuild).
	f *follower.Follower
}

// Open opens the index at path, creating it when absent.
func Open(path string) (*Index, error) {
	idx, err := openOrCreate(path)
	if err != nil {
		return nil, err
	}
	return newIndex(path, idx)
}

// newIndex is the Index of idx, open at path.
func newIndex(path string, idx bleve.Index) (*Index, error) {
	x := &Index{path: path, idx: idx, agents: map[string]string{}}
	f, err := follower.New(liveIndex{indexSink{x}}, follower.Config{Name: "search index " + path, TxSize: catchUpBatch})
	if err != nil {
		return nil, errors.Join(err, idx.Close())
	}
	x.f = f
	return x, nil
}

// OpenOrMoveAside is Open, except that an index that does not open
// (damaged, or written by an incompatible version) is moved aside to
// path.corrupt-<time>, never deleted, and a new empty one is created,
// which following the log fills again. It returns where the old one went,
// "" when it opened.
func OpenOrMoveAside(path string) (*Index, string, error) {
	x, err := Open(path)
	if err == nil {
		return x, "", nil
	}
	if _, serr := os.Stat(path); serr != nil {
		return nil, "", err
	}
	aside := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	if rerr := os.Rename(path, aside); rerr != nil {
		return nil, "", errors.Join(err, rerr)
	}
	x, err = Open(path)
	if err != nil {
		return nil, aside, err
	}
	return x, aside, nil
}

func openOrCreate(path string) (bleve.Index, error) {
	idx, err := bleve.Open(path)
	if errors.Is(err, bleve.ErrorIndexPathDoesNotExist) {
		idx, err = bleve.New(path, newMapping())
	}
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	return idx, nil
}

// newMapping: the text is analyzed and stored for snippets; the other
// fields are exact terms, kept out of the default search field so that a
// query's words match only texts.
func newMapping() mapping.IndexMapping {
	text := bleve.NewTextFieldMapping()
	text.Analyzer = "standard"
	text.Store = true
	text.IncludeTermVectors = true
	keyword := func() *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		return f
	}
	seq := bleve.NewNumericFieldMapping()
	seq.IncludeInAll = false
	at := bleve.NewDateTimeFieldMapping()
	at.IncludeInAll = false
	doc := bleve.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fieldText, text)
	for _, f := range []string{fieldExecution, fieldKind, fieldOwnerEntity, fieldOwnerID, fieldAgent} {
		doc.AddFieldMappingsAt(f, keyword())
	}
	doc.AddFieldMappingsAt(fieldSequence, seq)
	doc.AddFieldMappingsAt(fieldTime, at)
	m := bleve.NewIndexMapping()
	m.DefaultMapping = doc
	m.DefaultField = fieldText
	m.StoreDynamic = false
	m.IndexDynamic = false
	return m
}

// Close closes the index.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.idx.Close()
}

// Checkpoint is the offset of the last log record the index holds.
func (x *Index) Checkpoint() (uint64, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return checkpoint(x.idx)
}

func checkpoint(idx bleve.Index) (uint64, error) {
	b, err := idx.GetInternal([]byte(keyCheckpoint))
	if err != nil {
		return 0, fmt.Errorf("search index checkpoint: %w", err)
	}
	if len(b) == 0 {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("search index checkpoint: %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// Follow indexes src from the checkpoint + 1 until ctx ends, then returns
// nil; an error of the source or the index stops it, and calling it again
// resumes from the checkpoint.
func (x *Index) Follow(ctx context.Context, src Source) error {
	return x.f.Follow(ctx, src)
}

// CatchUp indexes src up to its last offset as read when CatchUp starts.
func (x *Index) CatchUp(ctx context.Context, src Source) error {
	return x.f.CatchUp(ctx, src, nil)
}

// indexSink is an Index as its follower sees it: the live index
// (liveIndex) or one a rebuild builds (freshIndex).
type indexSink struct{ x *Index }

var (
	_ follower.Rebuilder   = liveIndex{}
	_ follower.Replacement = (*freshIndex)(nil)
)

// Checkpoint implements follower.Sink.
func (s indexSink) Checkpoint() (uint64, error) { return s.x.Checkpoint() }

// Commit implements follower.Sink: the entries of batches go into one
// index batch. They are gathered before the index is locked, so that
// queries are held off only while the batch is written.
func (s indexSink) Commit(batches iter.Seq[[]eventstore.Entry]) (uint64, error) {
	var entries []eventstore.Entry
	for b := range batches {
		entries = append(entries, b...)
	}
	return s.x.apply(entries)
}

// apply indexes the entries past the checkpoint in one batch that also
// writes the new checkpoint, and returns it. Entries at or below the
// checkpoint are skipped: after a Rebuild's swap the index may already
// hold them.
func (x *Index) apply(entries []eventstore.Entry) (uint64, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return applyTo(x.idx, x.agents, entries)
}

func applyTo(idx bleve.Index, agents map[string]string, entries []eventstore.Entry) (uint64, error) {
	cp, err := checkpoint(idx)
	if err != nil {
		return 0, err
	}
	b := idx.NewBatch()
	for _, e := range entries {
		if e.Offset <= cp {
			continue
		}
		cp = e.Offset
		if e.Record == nil {
			continue
		}
		base := e.Record.RecordBase()
		if h, ok := e.Record.(*eventstore.Header); ok {
			agents[base.AgentExecutionID] = h.AgentID
			b.SetInternal([]byte(keyAgent+base.AgentExecutionID), []byte(h.AgentID))
			continue
		}
		text := Text(e.Record)
		if text == "" {
			continue
		}
		agent, ok := agents[base.AgentExecutionID]
		if !ok {
			v, err := idx.GetInternal([]byte(keyAgent + base.AgentExecutionID))
			if err != nil {
				return 0, fmt.Errorf("search index: agent of %s: %w", base.AgentExecutionID, err)
			}
			agent = string(v)
			agents[base.AgentExecutionID] = agent
		}
		doc := map[string]any{
			fieldText:        text,
			fieldExecution:   base.AgentExecutionID,
			fieldSequence:    float64(base.Sequence),
			fieldKind:        string(e.Record.Kind()),
			fieldOwnerEntity: string(base.Scope),
			fieldOwnerID:     base.OwnerID,
			fieldAgent:       agent,
			fieldTime:        base.OccurredAt.UTC(),
		}
		if err := b.Index(docID(base.AgentExecutionID, base.Sequence), doc); err != nil {
			return 0, fmt.Errorf("search index: record %d: %w", e.Offset, err)
		}
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], cp)
	b.SetInternal([]byte(keyCheckpoint), v[:])
	if err := idx.Batch(b); err != nil {
		return 0, fmt.Errorf("search index: write batch up to offset %d: %w", cp, err)
	}
	return cp, nil
}

// docID keys a document by its record's place in its journal, so indexing
// the record again replaces it.
func docID(execution string, seq uint64) string {
	return execution + "/" + strconv.FormatUint(seq, 10)
}

// Text is the searchable text of a record, "" for a record with none.
func Text(r eventstore.Record) string {
	switch r := r.(type) {
	case *eventstore.MessageAccepted:
		return messageText(r)
	case *eventstore.Observation:
		if r.Signal == nil {
			return r.RawText
		}
		return signalText(r.Signal)
	case *eventstore.ActivityUpdated:
		var parts []string
		if t := r.CurrentTarget; t != nil {
			parts = append(parts, t.Label, t.Path)
		}
		if p := r.Progress; p != nil {
			parts = append(parts, p.Summary)
		}
		return join(parts...)
	case *eventstore.StateChanged:
		return r.Reason
	case *eventstore.Interruption:
		return join(string(r.Reason), r.Detail)
	}
	return ""
}

func signalText(s *eventstore.Signal) string {
	switch p := s.Payload.(type) {
	case *eventstore.NeedsInputSignal:
		return join(append([]string{p.Question}, p.Choices...)...)
	case *eventstore.BlockedSignal:
		return join(p.Reason, p.Needs)
	case *eventstore.PlanSignal:
		parts := make([]string, 0, len(p.Items))
		for _, it := range p.Items {
			parts = append(parts, it.Text)
		}
		return join(parts...)
	case *eventstore.UsageSignal:
		// Token counts are numbers, not text anyone searches for.
		return ""
	case nil:
		return ""
	}
	return s.Payload.TimelineText()
}

// messageText is a message payload's "text" field when it has one, the
// payload itself otherwise (as the timeline shows it).
func messageText(r *eventstore.MessageAccepted) string {
	if text, err := r.Text(); err == nil && text != "" {
		return text
	}
	if len(r.Payload) == 0 || string(r.Payload) == "null" {
		return ""
	}
	return string(r.Payload)
}

func join(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Rebuild builds a fresh index from offset 1 of src beside the live one
// and swaps it in; queries keep reading the live one meanwhile, and a Follow
// running on x continues from the new index's checkpoint. progress, when
// not nil, is called after each batch.
func (x *Index) Rebuild(ctx context.Context, src Source, progress func(done, total uint64)) error {
	return x.f.Rebuild(ctx, src, progress)
}

// liveIndex is an Index that a rebuild replaces.
type liveIndex struct{ indexSink }

// freshIndex is the index a rebuild builds beside the live one.
type freshIndex struct {
	indexSink
	closed bool
}

// Beside implements follower.Rebuilder: a new index at <path>.rebuild.
func (s liveIndex) Beside() (follower.Replacement, error) {
	path := s.x.path + ".rebuild"
	if err := os.RemoveAll(path); err != nil {
		return nil, err
	}
	idx, err := bleve.New(path, newMapping())
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(path))
	}
	x, err := newIndex(path, idx)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(path))
	}
	return &freshIndex{indexSink: indexSink{x}}, nil
}

// close closes the new index once.
func (r *freshIndex) close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.x.Close()
}

// Discard implements follower.Replacement.
func (r *freshIndex) Discard() error {
	_ = r.close()
	return os.RemoveAll(r.x.path)
}

// Swap implements follower.Rebuilder. With the live index's writers held
// off, the new index catches up to the live one's checkpoint, so the swap
// happens at the same checkpoint; the live directory is then replaced by
// the new one and opened again.
func (s liveIndex) Swap(ctx context.Context, r follower.Replacement, catchUp func(context.Context, uint64) error) error {
	x, fresh := s.x, r.(*freshIndex)
	x.mu.Lock()
	defer x.mu.Unlock()
	live, err := checkpoint(x.idx)
	if err != nil {
		return err
	}
	if err := catchUp(ctx, live); err != nil {
		return err
	}
	if err := fresh.close(); err != nil {
		return err
	}
	if err := x.idx.Close(); err != nil {
		return fmt.Errorf("close live index: %w", err)
	}
	old := x.path + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(x.path, old); err != nil {
		return x.reopen(err)
	}
	if err := os.Rename(fresh.x.path, x.path); err != nil {
		_ = os.Rename(old, x.path)
		return x.reopen(err)
	}
	_ = os.RemoveAll(old)
	x.agents = map[string]string{}
	return x.reopen(nil)
}

// reopen opens the index at x.path after a swap (or a failed one).
func (x *Index) reopen(cause error) error {
	idx, err := openOrCreate(x.path)
	if err != nil {
		return errors.Join(cause, err)
	}
	x.idx = idx
	return cause
}
