package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/nats-io/nats.go/jetstream"
)

// Fleet-wide limits: at most N executions of one agent kind run across the
// fleet (serve --limit claude-code=5 on every host), so that a fleet does
// not drive every agent of a vendor into the same rate limit. Each kind
// has a key in a bucket beside the stream holding the executions that
// hold one of its slots; a slot is taken and given back by a
// compare-and-set of that key, so that two hosts taking the last slot at
// once cannot both have it. A slot whose execution ended without giving
// it back (its host died) is given back by the first live host.

// slots is the value of an agent kind's key: its holders and their hosts.
type slots struct {
	Holders map[string]string `json:"holders"`
}

// LimitsBucket is the limits bucket of the journal stream stream.
func LimitsBucket(stream string) string { return stream + "_limits" }

func (f *Fleet) openLimits(ctx context.Context) error {
	return retry(ctx, func(ctx context.Context) (err error) {
		f.limits, err = eventstore.OpenBucket(ctx, f.cfg.JS, jetstream.KeyValueConfig{Bucket: LimitsBucket(f.cfg.Stream), Storage: jetstream.FileStorage,
			Replicas: max(f.cfg.Replicas, 1), Description: "the fleet's slots per agent kind, and who holds them"})
		return err
	})
}

// ErrLimit is wrapped by Acquire's error when every slot of the kind is
// held.
var ErrLimit = errors.New("the fleet-wide limit of the agent kind is reached")

// Limit is this host's fleet-wide limit for agent, 0 for none.
func (f *Fleet) Limit(agent string) int { return f.cfg.Limits[agent] }

// Acquire takes a slot of agent's limit for execution id, run here; nil
// when agent has no limit or id holds one already.
func (f *Fleet) Acquire(ctx context.Context, agent, id string) error {
	limit := f.cfg.Limits[agent]
	if limit == 0 {
		return nil
	}
	return f.updateSlots(ctx, agent, func(s *slots) error {
		if _, ok := s.Holders[id]; ok {
			return nil
		}
		if len(s.Holders) >= limit {
			held := slices.Sorted(maps.Keys(s.Holders))
			return fmt.Errorf("%w: %d %s executions run across the fleet, its limit (serve --limit %s=%d): %v",
				ErrLimit, len(s.Holders), agent, agent, limit, held)
		}
		s.Holders[id] = f.cfg.Name
		return nil
	})
}

// Release gives back the slot of agent that execution id holds, if any.
func (f *Fleet) Release(ctx context.Context, agent, id string) error {
	if f.cfg.Limits[agent] == 0 && !f.held(ctx, agent, id) {
		return nil
	}
	return f.updateSlots(ctx, agent, func(s *slots) error {
		delete(s.Holders, id)
		return nil
	})
}

// held reports whether id holds a slot of agent (a limit this host does
// not have may still be one another host set).
func (f *Fleet) held(ctx context.Context, agent, id string) bool {
	e, err := f.limits.Get(ctx, agent)
	if err != nil {
		return false
	}
	var s slots
	return json.Unmarshal(e.Value(), &s) == nil && s.Holders[id] != ""
}

// Holding lists the executions holding a slot of agent's limit.
func (f *Fleet) Holding(ctx context.Context, agent string) ([]string, error) {
	e, err := f.limits.Get(ctx, agent)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s slots
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(s.Holders)), nil
}

// updateSlots applies change to agent's slots by compare-and-set, again
// while another host changes them at the same time.
func (f *Fleet) updateSlots(ctx context.Context, agent string, change func(*slots) error) error {
	for {
		s := slots{Holders: map[string]string{}}
		var rev uint64
		e, err := f.limits.Get(ctx, agent)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("fleet: read the slots of %s: %w", agent, err)
		default:
			if err := json.Unmarshal(e.Value(), &s); err != nil {
				return fmt.Errorf("fleet: the slots of %s do not read: %w", agent, err)
			}
			if s.Holders == nil {
				s.Holders = map[string]string{}
			}
			rev = e.Revision()
		}
		if err := change(&s); err != nil {
			return err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = f.limits.Create(ctx, agent, b)
		} else {
			_, err = f.limits.Update(ctx, agent, b, rev)
		}
		if err == nil {
			return nil
		}
		if !isWrongRevision(err) {
			return fmt.Errorf("fleet: update the slots of %s: %w", agent, err)
		}
	}
}

// freeEnded gives back the slots whose executions ended (Config.Ended),
// which a host that died could not give back itself.
func (f *Fleet) freeEnded(ctx context.Context) {
	if f.cfg.Ended == nil {
		return
	}
	keys, err := f.limits.Keys(ctx)
	if err != nil {
		return // none yet, or the log away: the next beat tries again
	}
	for _, agent := range keys {
		ids, err := f.Holding(ctx, agent)
		if err != nil {
			continue
		}
		for _, id := range ids {
			if f.cfg.Ended(id) {
				if err := f.updateSlots(ctx, agent, func(s *slots) error { delete(s.Holders, id); return nil }); err != nil {
					f.cfg.Logger.Warn("fleet: give back the slot of an ended execution", "agent", agent, "execution", id, "err", err)
				}
			}
		}
	}
}
