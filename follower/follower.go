package follower

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Source is the log a Follower reads.
type Source = eventstore.LogSource

// Sink is what a Follower applies the log to: a store that keeps, with what
// it makes of the log, the offset of the last entry it applied.
type Sink interface {
	// Checkpoint returns the offset of the last entry applied, 0 if none.
	Checkpoint() (uint64, error)
	// Commit applies the entries of batches, ranged over once, in one
	// atomic commit that also stores the new checkpoint, and returns the
	// checkpoint. Entries at or below the checkpoint are passed over, so
	// that committing an entry again is a no-op; an entry without a
	// Record stands for a record no reader can decode and only moves the
	// checkpoint. When Commit fails, nothing of it is kept.
	Commit(batches iter.Seq[[]eventstore.Entry]) (uint64, error)
}

// DefaultTxSize is the most entries a commit takes when Config.TxSize is 0.
const DefaultTxSize = 1000

// Config configures a Follower. Config{} is complete: every zero value
// means its default.
type Config struct {
	// Name names the sink in errors and logs, e.g. "projection
	// /data/projections.db". Empty means "sink".
	Name string
	// TxSize is the most entries one commit takes while the follower
	// catches up; the log is read in batches of at most maxReadBatch, which
	// a commit spans. Zero means DefaultTxSize.
	TxSize int
	// Linger is how long a caught-up follower whose last commit took
	// LingerAfter entries or more may wait, from that commit's end, for
	// more entries before it commits again; a WaitFor call ends the wait.
	// Zero means never: every commit takes what has arrived.
	Linger time.Duration
	// LingerAfter is the size of a commit after which the next one may
	// linger. Zero means 1.
	LingerAfter int
	// Logger receives the undecodable records passed over and the
	// rebuilds. Nil discards them.
	Logger *slog.Logger
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.TxSize < 0 {
		errs = append(errs, fmt.Errorf("follower: TxSize %d is negative (want 1 or more, or 0 for %d)", c.TxSize, DefaultTxSize))
	}
	if c.Linger < 0 {
		errs = append(errs, fmt.Errorf("follower: Linger %s is negative (want a positive duration, or 0 for none)", c.Linger))
	}
	if c.LingerAfter < 0 {
		errs = append(errs, fmt.Errorf("follower: LingerAfter %d is negative (want 1 or more, or 0 for 1)", c.LingerAfter))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = "sink"
	}
	if c.TxSize == 0 {
		c.TxSize = DefaultTxSize
	}
	if c.LingerAfter == 0 {
		c.LingerAfter = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Log attribute keys.
const (
	logKeySink   = "sink"
	logKeyOffset = "offset"
	logKeyTarget = "target"
	logKeyErr    = "err"
)

// Follower applies the log to one sink. Its methods are safe for concurrent
// use; the sink sees one commit at a time as long as one Follow, CatchUp or
// Apply runs at a time, which is the sink's to ensure.
type Follower struct {
	sink Sink
	cfg  Config
	log  *slog.Logger

	rebuilding atomic.Bool

	// waiters are the WaitFor calls waiting for the checkpoint. A commit
	// wakes those whose offset it reached; a change of another kind (a
	// rebuild's swap, the sink's Close) wakes all, to read the checkpoint
	// from the sink. So a few hundred waiters, each for its own offset,
	// are not all woken, nor each read the sink, at every commit.
	waitersMu sync.Mutex
	waiters   []*waiter
	// arrived holds a token when a waiter has come since the follower
	// last looked: a lingering commit happens at once for it.
	arrived chan struct{}
	// batchProgress has progress told as each read batch is applied, not
	// only after each commit: a rebuild's copy, whose one commit may take
	// the whole log, and whose progress a person watches.
	batchProgress bool
}

// New returns a Follower of sink.
func New(sink Sink, cfg Config) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Follower{sink: sink, cfg: cfg, log: cfg.Logger, arrived: make(chan struct{}, 1)}, nil
}

// errSourceEnded reports a Follow that stopped on its own.
var errSourceEnded = errors.New("the log source stopped yielding")

// Follow applies src from the checkpoint + 1 until ctx ends; it then
// returns nil. It returns an error when the source fails or the sink
// cannot commit; calling it again resumes from the checkpoint.
func (f *Follower) Follow(ctx context.Context, src Source) error {
	// The end of the log as it is now is what there is to catch up with
	// in full commits; without it (the source failing, which Follow
	// reports) every commit takes what has been read.
	end, _ := src.LastOffset(ctx)
	err := f.follow(ctx, src, 0, end, nil)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CatchUp is Follow until the checkpoint reaches the last offset of src as
// read when CatchUp starts. progress, when not nil, is called after every
// commit with the offsets applied so far and the number to apply, both
// counted from the checkpoint CatchUp started at. A ctx that ends first is
// an error: the sink did not catch up.
func (f *Follower) CatchUp(ctx context.Context, src Source, progress func(done, total uint64)) error {
	target, err := src.LastOffset(ctx)
	if err != nil {
		return fmt.Errorf("catch up %s: last offset: %w", f.cfg.Name, err)
	}
	return f.CatchUpTo(ctx, src, target, progress)
}

// CatchUpTo is CatchUp to a given offset; 0 is reached already.
func (f *Follower) CatchUpTo(ctx context.Context, src Source, target uint64, progress func(done, total uint64)) error {
	if target == 0 {
		return nil
	}
	return f.follow(ctx, src, target, target, progress)
}

// Apply commits one batch of entries read by the caller, as Sink.Commit
// does, and wakes the WaitFor calls it satisfies.
func (f *Follower) Apply(batch []eventstore.Entry) (uint64, error) {
	return f.commit(batch, nil)
}

// commit hands the sink first, and the batches more gives while the commit
// holds fewer than TxSize entries, in one commit; more, when not nil, is
// asked for a further batch of at most room entries and returns nil to end
// the commit.
func (f *Follower) commit(first []eventstore.Entry, more func(room int) []eventstore.Entry) (uint64, error) {
	cp, err := f.sink.Commit(func(yield func([]eventstore.Entry) bool) {
		batch := first
		for n := 0; ; {
			if !yield(batch) {
				return
			}
			if n += len(batch); more == nil || n >= f.cfg.TxSize {
				return
			}
			if batch = more(f.cfg.TxSize - n); batch == nil {
				return
			}
		}
	})
	if err != nil {
		return 0, err
	}
	f.wakeAt(cp)
	return cp, nil
}

// follow applies src from the checkpoint + 1, until ctx ends or, when
// target is not 0, the checkpoint reaches target. The log is read one
// batch ahead: while a batch is applied, the next one is fetched and
// decoded. Up to offset behind, which the log is known to hold, each
// commit takes TxSize entries; after it, a commit takes what has been
// read, so that a follower shows each record at once.
func (f *Follower) follow(ctx context.Context, src Source, target, behind uint64, progress func(done, total uint64)) error {
	cp, err := f.sink.Checkpoint()
	if err != nil {
		return err
	}
	if target > 0 && cp >= target {
		return nil
	}
	start := cp
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	batches := make(chan fetched, readAhead)
	wg.Go(func() { f.read(ctx, src, cp+1, readBatch(f.cfg.TxSize), batches) })
	// held is a batch taken from the reader to extend a commit that could
	// not take it (an error, or more entries than it had room for),
	// handled after the commit.
	var held *fetched
	// reached is the offset of the last entry handed to a commit.
	var reached uint64
	wait := time.NewTimer(0)
	defer wait.Stop()
	// lingerUntil is until when a commit that has caught up with the log
	// may wait for more of it: set under load (Config.Linger), zero
	// otherwise.
	var lingerUntil time.Time
	linger := time.NewTimer(0)
	defer linger.Stop()
	// more extends a commit with the next batch, when it has room for it,
	// so that a follower catching up commits TxSize entries at a time
	// while holding only a few read batches in memory. Up to behind it
	// waits for the batch, but not past maxSpanWait: the log may lack
	// records up to behind (deleted ones), and a commit must not hold
	// back what it applied for long.
	more := func(room int) []eventstore.Entry {
		if target > 0 && reached >= target {
			return nil
		}
		// The batches so far are applied, though not yet committed: a
		// commit of TxSize entries may span the whole log, and progress
		// said only after it would stay at zero until the end.
		if f.batchProgress && progress != nil && target > 0 && reached > start {
			progress(min(reached, target)-start, target-start)
		}
		var b fetched
		var ok bool
		if reached < behind {
			wait.Reset(maxSpanWait)
			select {
			case b, ok = <-batches:
			case <-wait.C:
			}
			wait.Stop()
		} else if left := time.Until(lingerUntil); left > 0 && !f.awaited() {
			// Nobody waits for this commit's entries to be visible: it
			// takes more of the log until one does.
			linger.Reset(left)
			select {
			case b, ok = <-batches:
			case <-linger.C:
			case <-f.arrived:
			}
			linger.Stop()
		} else {
			select {
			case b, ok = <-batches:
			default:
			}
		}
		switch {
		case !ok:
			return nil
		case b.err != nil || len(b.batch) > room:
			held = &b
			return nil
		}
		reached = lastOffset(b.batch, reached)
		return b.batch
	}
	for {
		var b fetched
		if held != nil {
			b, held = *held, nil
		} else {
			var ok bool
			if b, ok = <-batches; !ok {
				break
			}
		}
		if b.err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: follow log after offset %d: %w", f.cfg.Name, cp, b.err)
		}
		reached = lastOffset(b.batch, reached)
		before := cp
		if cp, err = f.commit(b.batch, more); err != nil {
			return err
		}
		// A commit of many entries means entries come faster than
		// commits end: the next one waits a little for more, and writes
		// once for all of them.
		lingerUntil = time.Time{}
		if f.cfg.Linger > 0 && cp-before >= uint64(f.cfg.LingerAfter) {
			lingerUntil = time.Now().Add(f.cfg.Linger)
		}
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
	return fmt.Errorf("%s: after offset %d: %w", f.cfg.Name, cp, errSourceEnded)
}

// lastOffset is the offset of batch's last entry, or else.
func lastOffset(batch []eventstore.Entry, or uint64) uint64 {
	if len(batch) == 0 {
		return or
	}
	return batch[len(batch)-1].Offset
}

// readBatch is how many entries the log is read in, for commits of txSize
// entries: a batch is held in memory from its read to its commit, a
// commit's entries are not (the sink decides what it keeps of them).
func readBatch(txSize int) int {
	return min(txSize, maxReadBatch)
}

// maxReadBatch bounds the read batches.
const maxReadBatch = 1000

// maxSpanWait is the longest a commit waits for the next batch of the log
// to extend it. Catching up, batches follow each other within
// milliseconds; the bound only matters when the log lacks records it was
// known to hold, and then costs that commit this much delay.
const maxSpanWait = time.Second

// readAhead is how many batches the reader of follow may fetch before the
// committer takes them. One keeps reading and applying overlapped; more
// only hold more of the log in memory.
const readAhead = 1

// fetched is one batch read from the log, or the error that ended reading.
type fetched struct {
	batch []eventstore.Entry
	err   error
}

// read sends src's batches from offset from to out until the source stops,
// fails or ctx ends, and closes out. A record no reader can decode (written
// past the store, or by a newer version) must not freeze the sink: it is
// logged and sent as an entry without a record, which moves the checkpoint
// past it. Replaying its journal reports it too.
func (f *Follower) read(ctx context.Context, src Source, from uint64, maxBatch int, out chan<- fetched) {
	defer close(out)
	for batch, err := range src.Follow(ctx, from, maxBatch) {
		var bad *eventstore.OffsetError
		if errors.As(err, &bad) {
			f.log.Warn("skip undecodable record", logKeyOffset, bad.Offset, logKeyErr, bad.Err)
			batch, err = append(batch, eventstore.Entry{Offset: bad.Offset}), nil
		}
		select {
		case out <- fetched{batch, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// Lag is how far a sink is behind its log.
type Lag struct {
	// Checkpoint is the offset of the last record applied.
	Checkpoint uint64
	// LastOffset is the offset of the newest record in the log.
	LastOffset uint64
	// Records is the number of records not applied yet.
	Records uint64
}

// Lag compares the checkpoint with the end of src.
func (f *Follower) Lag(ctx context.Context, src Source) (Lag, error) {
	cp, err := f.sink.Checkpoint()
	if err != nil {
		return Lag{}, err
	}
	last, err := src.LastOffset(ctx)
	if err != nil {
		return Lag{}, fmt.Errorf("lag of %s: last offset: %w", f.cfg.Name, err)
	}
	l := Lag{Checkpoint: cp, LastOffset: last}
	if last > cp {
		l.Records = last - cp
	}
	return l, nil
}
