package follower

import (
	"context"
	"errors"
	"fmt"
)

// ErrRebuilding reports a Rebuild started while another one runs on the
// same sink.
var ErrRebuilding = errors.New("follower: a rebuild is already running")

// Rebuilder is a sink that can be rebuilt beside itself: Rebuild needs it.
type Rebuilder interface {
	Sink
	// Beside opens an empty copy of the sink in the place where a rebuild
	// builds one (for a file, <path>.rebuild), first removing whatever a
	// failed rebuild left there.
	Beside() (Replacement, error)
	// Swap puts r, which Beside returned, in the sink's place. It holds
	// the sink's writers and the swap's other side off throughout, and
	// first calls catchUp with the sink's checkpoint, so that r holds
	// every entry the sink applied; afterwards the sink serves r's data
	// and its next commit continues from r's checkpoint. When Swap fails,
	// the sink serves as before.
	Swap(ctx context.Context, r Replacement, catchUp func(ctx context.Context, checkpoint uint64) error) error
}

// Replacement is a copy of a sink being rebuilt beside it.
type Replacement interface {
	Sink
	// Discard closes the copy and removes what it wrote, after a rebuild
	// that failed; it is called at most once, and never after a Swap that
	// succeeded.
	Discard() error
}

// Verifier is a Replacement that can check itself before it is swapped in.
type Verifier interface {
	// Verify checks the copy once it holds the log up to at least target.
	Verify(target uint64) error
}

// Rebuild builds a fresh copy of the sink from offset 1 of src beside it
// and swaps it in. progress, when not nil, follows the build up to the end
// of src as it is when Rebuild starts, as CatchUp's does but also as each
// read batch is applied within a commit. The sink must be a Rebuilder.
//
// Readers of the sink keep reading it throughout, except for the swap
// itself. A Follow running on the sink may keep running: before the swap
// the copy is caught up to at least the sink's checkpoint while the sink's
// writers are held off, so its next commit continues from the copy's
// checkpoint (entries the copy holds are passed over). If Rebuild fails,
// the copy is discarded and the sink is left as it was.
func (f *Follower) Rebuild(ctx context.Context, src Source, progress func(done, total uint64)) (err error) {
	live, ok := f.sink.(Rebuilder)
	if !ok {
		return fmt.Errorf("rebuild %s: a %T cannot be rebuilt beside itself (want a follower.Rebuilder)", f.cfg.Name, f.sink)
	}
	if !f.rebuilding.CompareAndSwap(false, true) {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, ErrRebuilding)
	}
	defer f.rebuilding.Store(false)

	r, err := live.Beside()
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, err)
	}
	swapped := false
	defer func() {
		if swapped {
			return
		}
		if dErr := r.Discard(); dErr != nil {
			err = fmt.Errorf("%w; discarding the copy failed: %w", err, dErr)
		}
	}()
	// Catching up to a target, the copy's follower never lingers; it
	// commits as the sink's does.
	fresh := &Follower{sink: r, cfg: f.cfg, log: f.log, arrived: make(chan struct{}, 1), batchProgress: true}

	target, err := src.LastOffset(ctx)
	if err != nil {
		return fmt.Errorf("rebuild %s: last offset: %w", f.cfg.Name, err)
	}
	f.log.Info("rebuilding", logKeySink, f.cfg.Name, logKeyTarget, target)
	if err := fresh.CatchUpTo(ctx, src, target, progress); err != nil {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, err)
	}
	// Close most of the distance to a follower running on the sink before
	// holding its writers off.
	liveCP, err := f.sink.Checkpoint()
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, err)
	}
	if err := fresh.CatchUpTo(ctx, src, liveCP, nil); err != nil {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, err)
	}
	if v, ok := r.(Verifier); ok {
		if err := v.Verify(target); err != nil {
			return fmt.Errorf("rebuild %s: the rebuilt copy fails its check: %w", f.cfg.Name, err)
		}
	}
	err = live.Swap(ctx, r, func(ctx context.Context, checkpoint uint64) error {
		return fresh.CatchUpTo(ctx, src, checkpoint, nil)
	})
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", f.cfg.Name, err)
	}
	swapped = true
	// The checkpoint is now the copy's, read from the sink.
	f.WakeAll()
	return nil
}
