package search

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Source is the log the index reads.
type Source = eventstore.LogSource

// ErrRebuilding reports a Rebuild started while another runs.
var ErrRebuilding = errors.New("a rebuild of the search index is already running")

// batchSize is how many log entries are read at a time.
const batchSize = 1000

// catchUpBatch is how many log entries one index batch takes while
// catching up: large enough that few segments are written, small enough to
// hold in memory.
const catchUpBatch = 10_000

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

	rebuilding sync.Mutex
}

// Open opens the index at path, creating it when absent.
func Open(path string) (*Index, error) {
	idx, err := openOrCreate(path)
	if err != nil {
		return nil, err
	}
	return &Index{path: path, idx: idx, agents: map[string]string{}}, nil
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
	err := x.follow(ctx, src, 0, nil)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CatchUp indexes src up to its last offset as read when CatchUp starts.
func (x *Index) CatchUp(ctx context.Context, src Source) error {
	target, err := src.LastOffset(ctx)
	if err != nil {
		return fmt.Errorf("search index catch up: %w", err)
	}
	if target == 0 {
		return nil
	}
	return x.follow(ctx, src, target, nil)
}

// follow applies src from the checkpoint + 1 until ctx ends or, when target
// is not 0, the checkpoint reaches target.
func (x *Index) follow(ctx context.Context, src Source, target uint64, progress func(done, total uint64)) error {
	cp, err := x.Checkpoint()
	if err != nil {
		return err
	}
	if target > 0 && cp >= target {
		return nil
	}
	start := cp
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Catching up to a target, read batches are gathered into index
	// batches of catchUpBatch entries: each index batch costs a segment to
	// write and later merge. Following, each read batch is indexed at
	// once, so that a record is searchable as soon as it is read.
	behind := target
	var pending []eventstore.Entry
	for batch, err := range src.Follow(ctx, cp+1, batchSize) {
		var bad *eventstore.OffsetError
		switch {
		case errors.As(err, &bad):
			// An undecodable record holds no text this build can read;
			// it is passed over as the read models pass it over.
			batch = []eventstore.Entry{{Offset: bad.Offset}}
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("search index: follow log after offset %d: %w", cp, err)
		}
		pending = append(pending, batch...)
		if len(pending) < catchUpBatch && len(batch) > 0 && batch[len(batch)-1].Offset < behind {
			continue
		}
		if cp, err = x.apply(pending); err != nil {
			return err
		}
		pending = pending[:0]
		if target == 0 {
			continue
		}
		if progress != nil {
			progress(min(cp, target)-start, target-start)
		}
		if cp >= target {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("search index: after offset %d: the log source stopped yielding", cp)
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

// Rebuild builds a fresh index from offset 1 of src beside the live one and
// swaps it in; queries keep reading the live one meanwhile, and a Follow
// running on x continues from the new index's checkpoint. progress, when
// not nil, is called after each batch.
func (x *Index) Rebuild(ctx context.Context, src Source, progress func(done, total uint64)) error {
	if !x.rebuilding.TryLock() {
		return ErrRebuilding
	}
	defer x.rebuilding.Unlock()
	fresh := x.path + ".rebuild"
	if err := os.RemoveAll(fresh); err != nil {
		return fmt.Errorf("search index rebuild: %w", err)
	}
	idx, err := bleve.New(fresh, newMapping())
	if err != nil {
		return fmt.Errorf("search index rebuild: %w", err)
	}
	nx := &Index{path: fresh, idx: idx, agents: map[string]string{}}
	discard := func() {
		_ = idx.Close()
		_ = os.RemoveAll(fresh)
	}
	target, err := src.LastOffset(ctx)
	if err != nil {
		discard()
		return fmt.Errorf("search index rebuild: last offset: %w", err)
	}
	if target > 0 {
		if err := nx.follow(ctx, src, target, progress); err != nil {
			discard()
			return err
		}
	}
	// The live index may have gone past target meanwhile; with the
	// follower held off, the fresh one catches up to it, and the swap
	// happens at the same checkpoint.
	x.mu.Lock()
	defer x.mu.Unlock()
	live, err := checkpoint(x.idx)
	if err != nil {
		discard()
		return err
	}
	if live > target {
		if err := nx.follow(ctx, src, live, nil); err != nil {
			discard()
			return err
		}
	}
	if err := idx.Close(); err != nil {
		_ = os.RemoveAll(fresh)
		return fmt.Errorf("search index rebuild: %w", err)
	}
	if err := x.idx.Close(); err != nil {
		return fmt.Errorf("search index rebuild: close live index: %w", err)
	}
	old := x.path + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(x.path, old); err != nil {
		return x.reopen(fmt.Errorf("search index rebuild: %w", err))
	}
	if err := os.Rename(fresh, x.path); err != nil {
		_ = os.Rename(old, x.path)
		return x.reopen(fmt.Errorf("search index rebuild: %w", err))
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
