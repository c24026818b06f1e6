package fleet

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/nats-io/nats.go/jetstream"
)

// The fleet's queue: launches that wait (dispatch mode queued or
// scheduled) are kept in a bucket beside the stream, one key per run, and
// started by exactly one host. A host with room takes the first eligible
// run it may start by claiming it, a compare-and-set of its key on the
// revision it read, so that of two hosts that try at once one wins; the
// winner's Start writes the run's placement in its journal before it
// starts a process, and a run whose journal names a host already is never
// started again (the journal, not the claim, is the fence). A claim whose
// host is lost is taken back by the first live host (Config.Orphan says
// whether the run was placed before its host died), so a queued run
// outlives the host that took it.

// Queued is a run in the fleet's queue: the value of its key.
type Queued struct {
	// ID is the execution's id, the key.
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// Host and On are its placement: the host that must start it, the
	// labels its host must have.
	Host string            `json:"host,omitempty"`
	On   map[string]string `json:"on,omitempty"`
	// EnvProfile is the environment profile its host must have.
	EnvProfile string `json:"envProfile,omitempty"`
	// QueuedAt is when it was queued; Eligible when it may start (its
	// scheduled time, or QueuedAt).
	QueuedAt time.Time `json:"queuedAt"`
	Eligible time.Time `json:"eligible"`
	// AcceptedBy is the host that took the launch, which keeps its
	// environment (never in the bucket) for the host that starts it.
	AcceptedBy string `json:"acceptedBy"`
	// HasEnv says the launch gave an environment, which AcceptedBy keeps.
	HasEnv bool `json:"hasEnv,omitempty"`
	// Launch is what starting it needs but its environment, in the
	// runtime's words.
	Launch json.RawMessage `json:"launch"`
	// Claim is the host starting it; nil while it waits.
	Claim *Claim `json:"claim,omitempty"`

	rev uint64
}

// Claim is a host's hold on a queued run it starts.
type Claim struct {
	Host     string    `json:"host"`
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
}

// compareQueued orders the queue as a daemon on its own does: who may start
// first, then who came first.
func compareQueued(a, b Queued) int {
	return cmp.Or(a.Eligible.Compare(b.Eligible), a.QueuedAt.Compare(b.QueuedAt), strings.Compare(a.ID, b.ID))
}

// ErrQueued is returned by Enqueue for a run the queue holds already.
var ErrQueued = errors.New("the run is queued already")

// QueueBucket is the queue bucket of the journal stream stream.
func QueueBucket(stream string) string { return stream + "_queue" }

func (f *Fleet) openQueue(ctx context.Context) error {
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) (err error) {
		kv, err = eventstore.OpenBucket(ctx, f.cfg.JS, jetstream.KeyValueConfig{Bucket: QueueBucket(f.cfg.Stream), Storage: jetstream.FileStorage,
			Replicas: max(f.cfg.Replicas, 1), Description: "the fleet's queue of launches waiting to start"})
		return err
	})
	if err != nil {
		return fmt.Errorf("fleet: open the queue bucket: %w", err)
	}
	f.queue = kv
	var w jetstream.KeyWatcher
	err = retry(ctx, func(context.Context) (err error) {
		w, err = kv.WatchAll(context.WithoutCancel(ctx))
		return err
	})
	if err != nil {
		return fmt.Errorf("fleet: watch the queue: %w", err)
	}
	f.queued = map[string]Queued{}
	// The runs in the bucket now are known before Join returns.
	for e := range w.Updates() {
		if e == nil {
			break
		}
		f.heardRun(e)
	}
	f.queueWatch = w
	return nil
}

func (f *Fleet) watchQueue(ctx context.Context) {
	defer f.queueWatch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-f.queueWatch.Updates():
			if !ok {
				return
			}
			if e != nil {
				f.heardRun(e)
				f.kick()
			}
		}
	}
}

func (f *Fleet) heardRun(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		f.mu.Lock()
		delete(f.queued, e.Key())
		f.mu.Unlock()
		if f.cfg.Dequeued != nil {
			f.cfg.Dequeued(e.Key())
		}
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var q Queued
	if err := json.Unmarshal(e.Value(), &q); err != nil || q.ID != e.Key() {
		f.cfg.Logger.Warn("fleet: a queued run that does not read is passed over", "key", e.Key(), "err", err)
		return
	}
	q.rev = e.Revision()
	if old, ok := f.queued[q.ID]; ok && old.rev > q.rev {
		return // this member's own newer write came first
	}
	f.queued[q.ID] = q
}

// Enqueue puts a run in the fleet's queue; ErrQueued when it is there.
func (f *Fleet) Enqueue(ctx context.Context, q Queued) error {
	q.AcceptedBy, q.Claim = f.cfg.Name, nil
	b, err := json.Marshal(q)
	if err != nil {
		return err
	}
	rev, err := f.queue.Create(ctx, q.ID, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("%s: %w", q.ID, ErrQueued)
	} else if err != nil {
		return fmt.Errorf("fleet: queue %s: %w", q.ID, err)
	}
	// Known here at once, as the bucket's watch will tell it: whoever took
	// the launch lists it next, before the watch catches up.
	q.rev = rev
	f.mu.Lock()
	if old, ok := f.queued[q.ID]; !ok || old.rev < rev {
		f.queued[q.ID] = q
	}
	f.mu.Unlock()
	f.kick()
	return nil
}

// Queue lists the queued runs, the next to start first, as this member
// knows them.
func (f *Fleet) Queue() []Queued {
	f.mu.Lock()
	out := make([]Queued, 0, len(f.queued))
	for _, q := range f.queued {
		out = append(out, q)
	}
	f.mu.Unlock()
	slices.SortFunc(out, compareQueued)
	return out
}

// Cancel takes a run that waits out of the queue and reports whether it
// did: false when it is not queued, or a host is starting it (its Claim,
// returned).
func (f *Fleet) Cancel(ctx context.Context, id string) (bool, *Claim, error) {
	for {
		e, err := f.queue.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrInvalidKey) {
			// An id that cannot be a key (a NUL, a space) was never queued.
			return false, nil, nil
		}
		if err != nil {
			return false, nil, err
		}
		var q Queued
		if err := json.Unmarshal(e.Value(), &q); err != nil {
			return false, nil, err
		}
		if q.Claim != nil {
			return false, q.Claim, nil
		}
		err = f.queue.Delete(ctx, id, jetstream.LastRevision(e.Revision()))
		if err == nil {
			f.mu.Lock()
			delete(f.queued, id)
			f.mu.Unlock()
			return true, nil, nil
		}
		if !isWrongRevision(err) {
			return false, nil, err
		}
		// Claimed or changed meanwhile: look again.
	}
}

// isWrongRevision reports a compare-and-set that lost: the key changed, or
// was created, since it was read. A replicated bucket (a cluster's, with
// the stream's replicas) says so with code 10164 rather than 10071, which
// ErrKeyExists alone does not match.
func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) ||
		errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// kick asks the dispatcher to look at the queue now.
func (f *Fleet) kick() {
	select {
	case f.dispatchNow <- struct{}{}:
	default:
	}
}

// Kick asks the dispatcher to look at the queue now: room may have been
// made (a run ended).
func (f *Fleet) Kick() { f.kick() }

// dispatchLoop starts the runs this host may start, whenever the queue or
// the room may have changed, and at each run's eligible time.
func (f *Fleet) dispatchLoop(ctx context.Context) {
	if f.cfg.Orphan != nil {
		f.reclaimOwn(ctx)
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.dispatchNow:
		}
		next := f.dispatch(ctx)
		wait := f.cfg.Lease / BeatsPerLease
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), time.Millisecond))
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(wait)
	}
}

// dispatch claims and starts, in the queue's order, every eligible run
// this host may start, and returns when the next one becomes eligible.
func (f *Fleet) dispatch(ctx context.Context) time.Time {
	now := time.Now()
	var next time.Time
	for _, q := range f.Queue() {
		if q.Claim != nil {
			continue
		}
		if q.Eligible.After(now) {
			if next.IsZero() || q.Eligible.Before(next) {
				next = q.Eligible
			}
			continue
		}
		if f.cfg.CanStart == nil || !f.cfg.CanStart(q, int(f.inflight.Load())) {
			continue
		}
		claimed, err := f.claim(ctx, q)
		if err != nil {
			if ctx.Err() == nil {
				f.cfg.Logger.Warn("fleet: claim a queued run", "execution", q.ID, "err", err)
			}
			continue
		}
		if !claimed {
			continue
		}
		f.starts.Add(1)
		f.inflight.Add(1)
		go func() {
			defer f.starts.Done()
			defer f.inflight.Add(-1)
			retry := f.cfg.Start(context.WithoutCancel(ctx), q)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if retry {
				// Not started, and may be later: it waits again.
				f.release(dctx, q.ID)
				return
			}
			// Started, or failed and journaled so: it waits no more.
			if err := f.queue.Delete(dctx, q.ID); err != nil {
				f.cfg.Logger.Warn("fleet: take a started run out of the queue", "execution", q.ID, "err", err)
			}
			f.kick()
		}()
	}
	return next
}

// claim sets this host's claim on q, if no one changed it since it was
// read.
func (f *Fleet) claim(ctx context.Context, q Queued) (bool, error) {
	q.Claim = &Claim{Host: f.cfg.Name, Instance: f.instance, At: time.Now().UTC()}
	b, err := json.Marshal(q)
	if err != nil {
		return false, err
	}
	rev, err := f.queue.Update(ctx, q.ID, b, q.rev)
	if isWrongRevision(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	q.rev = rev
	f.mu.Lock()
	f.queued[q.ID] = q
	f.mu.Unlock()
	return true, nil
}

// release takes this host's claim off a run it did not start.
func (f *Fleet) release(ctx context.Context, id string) {
	e, err := f.queue.Get(ctx, id)
	if err != nil {
		f.cfg.Logger.Warn("fleet: release a queued run", "execution", id, "err", err)
		return
	}
	var q Queued
	if json.Unmarshal(e.Value(), &q) != nil || q.Claim == nil || q.Claim.Instance != f.instance {
		return
	}
	q.Claim = nil
	b, _ := json.Marshal(q)
	if _, err := f.queue.Update(ctx, id, b, e.Revision()); err != nil {
		f.cfg.Logger.Warn("fleet: release a queued run", "execution", id, "err", err)
	}
}

// reclaimOwn takes back the claims a previous process of this host left:
// a run it placed here waits again for this host alone (one whose process
// started was attached to or ended by the recovery, and starts no more:
// its journal is not starting any longer), any other for any host.
func (f *Fleet) reclaimOwn(ctx context.Context) {
	for _, q := range f.Queue() {
		if q.Claim == nil || q.Claim.Host != f.cfg.Name || q.Claim.Instance == f.instance {
			continue
		}
		placed, err := f.cfg.Orphan(ctx, q)
		if err != nil {
			f.cfg.Logger.Warn("fleet: look at a run this host's previous process claimed", "execution", q.ID, "err", err)
			continue
		}
		q.Claim = nil
		if placed {
			q.Host = f.cfg.Name
		}
		b, _ := json.Marshal(q)
		if _, err := f.queue.Update(ctx, q.ID, b, q.rev); err != nil && !isWrongRevision(err) {
			f.cfg.Logger.Warn("fleet: take back a run this host's previous process claimed", "execution", q.ID, "err", err)
		}
	}
}

// takeBack deals with the runs claimed by a host process that is gone:
// those it placed are its executions (ended with it) and leave the queue;
// the others wait again for any host.
func (f *Fleet) takeBack(ctx context.Context, gone func(c Claim) bool) {
	for _, q := range f.Queue() {
		if q.Claim == nil || !gone(*q.Claim) {
			continue
		}
		placed, err := f.cfg.Orphan(ctx, q)
		if err != nil {
			f.cfg.Logger.Warn("fleet: look at a run its host was starting when it was lost", "execution", q.ID, "err", err)
			continue
		}
		if placed {
			if err := f.queue.Delete(ctx, q.ID, jetstream.LastRevision(q.rev)); err != nil && !isWrongRevision(err) {
				f.cfg.Logger.Warn("fleet: take a run of a lost host out of the queue", "execution", q.ID, "err", err)
			}
			continue
		}
		claim := q.Claim
		q.Claim = nil
		b, _ := json.Marshal(q)
		if _, err := f.queue.Update(ctx, q.ID, b, q.rev); err != nil && !isWrongRevision(err) {
			f.cfg.Logger.Warn("fleet: queue again a run its lost host had not started", "execution", q.ID, "err", err)
			continue
		}
		f.cfg.Logger.Warn("fleet: a queued run that a lost host had claimed waits again", "execution", q.ID, "host", claim.Host)
	}
	f.kick()
}
