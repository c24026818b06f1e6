package daemon

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
	"github.com/agentjournal/agentjournal/runtime"
)

// sharedQueue is the fleet's queue as the runtime sees it
// (runtime.SharedQueue). The runtime is built before the daemon joins the
// fleet, and the fleet's first heartbeat asks for the queue before Join
// returns: until then the queue reads empty.
type sharedQueue struct{ f *atomic.Pointer[fleet.Fleet] }

var _ runtime.SharedQueue = sharedQueue{}

func (q sharedQueue) Enqueue(ctx context.Context, r runtime.SharedRun) error {
	return q.f.Load().Enqueue(ctx, fleet.Queued{ID: r.ID, Agent: r.Agent, Host: r.Host, On: r.On, EnvProfile: r.EnvProfile, QueuedAt: r.QueuedAt,
		Eligible: r.Eligible, HasEnv: r.HasEnv, Launch: r.Launch})
}

func (q sharedQueue) Cancel(ctx context.Context, id string) (bool, string, error) {
	cancelled, claim, err := q.f.Load().Cancel(ctx, id)
	if claim != nil {
		return false, claim.Host, err
	}
	return cancelled, "", err
}

func (q sharedQueue) Queued() []runtime.SharedRun {
	f := q.f.Load()
	if f == nil {
		return nil
	}
	runs := f.Queue()
	out := make([]runtime.SharedRun, len(runs))
	for i, r := range runs {
		out[i] = runtime.SharedRun{ID: r.ID, Agent: r.Agent, Host: r.Host, On: r.On, EnvProfile: r.EnvProfile, QueuedAt: r.QueuedAt, Eligible: r.Eligible,
			AcceptedBy: r.AcceptedBy, HasEnv: r.HasEnv, Launch: r.Launch}
		if r.Claim != nil {
			out[i].StartingOn = r.Claim.Host
		}
	}
	return out
}

func (q sharedQueue) Kick() {
	if f := q.f.Load(); f != nil {
		f.Kick()
	}
}

// canStart says whether this host may start a queued run now: it has a
// free slot (counting the runs it is starting) and the memory, and the
// run's placement allows it.
func (d *Daemon) canStart(q fleet.Queued, starting int) bool {
	f := d.member.Load()
	if f == nil || d.rt.Running()+starting >= d.rt.MaxRunning() || f.Room() != nil {
		return false
	}
	self := fleet.Host{Name: d.cfg.HostName, Labels: d.cfg.Labels}
	self.Profiles = d.rt.Profiles()
	if self.Matches(q.Host, q.On, q.EnvProfile) != nil {
		return false
	}
	if limit := f.Limit(q.Agent); limit > 0 {
		held, err := f.Holding(context.Background(), q.Agent)
		return err == nil && len(held) < limit
	}
	return true
}

// ended says whether an execution has ended, as the read models have it;
// one they do not hold yet has not.
func (d *Daemon) ended(id string) bool {
	st, err := d.views.Execution(id)
	return err == nil && st.Lifecycle.Final()
}

// release gives back the fleet-wide limit's slot an execution that ended
// here held.
func (d *Daemon) release(ref eventstore.Reference) {
	f := d.member.Load()
	if f == nil || len(d.cfg.Limits) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for agent := range d.cfg.Limits {
		if err := f.Release(ctx, agent, ref.AgentExecutionID); err != nil {
			d.logger.Warn("give back a fleet-wide limit's slot; the first live host does once it sees the end", "execution", ref.AgentExecutionID, "err", err)
		}
	}
}

// startQueued starts a queued run this host claimed, with the environment
// the host that accepted it keeps. It says to retry when that host is live
// but did not answer; a run whose environment is lost with its host is
// journaled as failed.
func (d *Daemon) startQueued(ctx context.Context, q fleet.Queued) (retry bool) {
	f := d.member.Load()
	var env []string
	if q.HasEnv {
		var err error
		if q.AcceptedBy == d.cfg.HostName {
			env, err = d.rt.QueuedEnv(q.ID)
		} else {
			env, err = f.EnvOf(ctx, q.AcceptedBy, q.ID)
		}
		if err != nil {
			if m, ok := f.Member(q.AcceptedBy); ok && m.State == fleet.Live && errors.Is(err, fleet.ErrUnreachable) {
				d.logger.Warn("a queued run's environment is not to be had now; it waits again", "execution", q.ID, "host", q.AcceptedBy, "err", err)
				return true
			}
			d.failQueued(ctx, q.ID, "its environment was kept by host "+q.AcceptedBy+", which cannot give it: "+err.Error()+"; launch it again")
			return false
		}
	}
	switch err := f.Acquire(ctx, q.Agent, q.ID); {
	case errors.Is(err, fleet.ErrLimit):
		return true // another host took the last slot first: it waits
	case err != nil:
		d.logger.Warn("take a fleet-wide limit's slot for a queued run; it waits again", "execution", q.ID, "err", err)
		return true
	}
	if err := d.rt.StartShared(ctx, runtime.SharedRun{ID: q.ID, Agent: q.Agent, Host: q.Host, On: maps.Clone(q.On), EnvProfile: q.EnvProfile,
		QueuedAt: q.QueuedAt, Eligible: q.Eligible, AcceptedBy: q.AcceptedBy, HasEnv: q.HasEnv, Launch: q.Launch}, env); err != nil {
		d.logger.Error("start a queued run", "execution", q.ID, "err", err)
		if !d.rt.IsRunning(q.ID) {
			if err := f.Release(context.WithoutCancel(ctx), q.Agent, q.ID); err != nil {
				d.logger.Warn("give back the slot of a queued run that did not start", "execution", q.ID, "err", err)
			}
		}
	}
	return false
}

// failQueued ends a queued run that can never start.
func (d *Daemon) failQueued(ctx context.Context, id, reason string) {
	if err := d.rt.FailQueued(ctx, id, reason); err != nil {
		d.logger.Error("end a queued run that cannot start", "execution", id, "reason", reason, "err", err)
	}
}

// orphan says whether a queued run claimed by a host that is gone was
// placed there before it went.
func (d *Daemon) orphan(ctx context.Context, q fleet.Queued) (bool, error) {
	ref, err := d.store.Lookup(ctx, q.ID)
	if errors.Is(err, eventstore.ErrJournalNotFound) {
		return true, nil // nothing to start
	}
	if err != nil {
		return false, err
	}
	host, err := d.rt.PlacedOn(ctx, ref)
	return host != "", err
}
