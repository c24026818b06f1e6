package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fleet"
)

// place picks the host of the fleet that runs a launch: this one unless the
// launch's placement rules it out, or it has no room and another host has.
// Among the hosts that match, one with room comes first, this one before
// the others, then the one with the most free slots; a match without room
// still takes the launch (it starts at once, or waits in that host's
// queue), as a daemon on its own does. A host whose free memory is below
// its floor is never chosen. The other hosts' load is as of their last
// heartbeat (Lease/5 old at most), so a burst of launches may all go to one
// host that had room; it takes them all the same.
func (s *Server) place(in *wire.LaunchRequest) (string, error) {
	self := s.cfg.Fleet.Name()
	if err := checkPlacement(in.Placement); err != nil {
		return "", err
	}
	var p wire.Placement
	if in.Placement != nil {
		p = *in.Placement
	}
	var fits []fleet.Member
	var why []string
	for _, m := range s.cfg.Fleet.Members() {
		if m.Self {
			// This host's own load as it is now; the others' as of their
			// last heartbeat.
			m.Capacity.Running, m.Capacity.MaxRunning = s.cfg.Runtime.Running(), s.cfg.Runtime.MaxRunning()
		}
		switch err := m.Matches(p.Host, p.On, in.EnvProfile); {
		case m.State != fleet.Live:
			if p.Host == m.Name {
				why = append(why, fmt.Sprintf("%s is %s", m.Name, m.State))
			}
		case err != nil:
			why = append(why, fmt.Sprintf("%s: %v", m.Name, err))
		case m.Capacity.Room() != nil:
			why = append(why, fmt.Sprintf("%s has %v", m.Name, m.Capacity.Room()))
		default:
			fits = append(fits, m)
		}
	}
	if len(fits) == 0 {
		if err := unplaceable(s.cfg.Fleet.Members(), p.Host, in.EnvProfile); err != nil {
			return "", err
		}
		return "", unavailable("no live host of the fleet can run this launch now (%s); see GET /v1/hosts", strings.Join(why, "; "))
	}
	slices.SortStableFunc(fits, func(a, b fleet.Member) int {
		ra, rb := a.Capacity.Slots() > 0, b.Capacity.Slots() > 0
		switch {
		case ra != rb:
			return map[bool]int{true: -1, false: 1}[ra]
		case a.Name == self:
			return -1
		case b.Name == self:
			return 1
		}
		return b.Capacity.Slots() - a.Capacity.Slots()
	})
	return fits[0].Name, nil
}

// unplaceable refuses a launch that no host of the fleet could ever take,
// whatever their load: it names a host the fleet has not heard of, or an
// environment profile no host has. These are the launch's mistakes, not
// the fleet's state, so they are a 400 listing what is accepted; a launch
// that a host could take later is left to the 503 that says why none can
// now.
func unplaceable(members []fleet.Member, host, profile string) *apiError {
	var names, profiles []string
	for _, m := range members {
		if m.State == fleet.Left {
			continue
		}
		names = append(names, m.Name)
		for _, pr := range m.Profiles {
			if !slices.Contains(profiles, pr) {
				profiles = append(profiles, pr)
			}
		}
	}
	slices.Sort(names)
	slices.Sort(profiles)
	switch {
	case host != "" && !slices.Contains(names, host):
		return invalidField("placement.host", names, "no host is named %s in this fleet", host)
	case profile != "" && !slices.Contains(profiles, profile):
		if len(profiles) == 0 {
			return invalidField("envProfile", nil, "every host of the fleet has no environment profile %s (none has any: launch without one)", profile)
		}
		return invalidField("envProfile", profiles, "every host of the fleet has no environment profile %s", profile)
	}
	return nil
}

// checkPlacement refuses a placement that names no host a fleet can have.
func checkPlacement(p *wire.Placement) error {
	if p == nil {
		return nil
	}
	if p.Host != "" {
		if err := fleet.ValidName(p.Host); err != nil {
			return invalidField("placement.host", nil, "%v", err)
		}
	}
	for k, v := range p.On {
		if _, _, err := fleet.ParseLabel(k + "=" + v); err != nil {
			return invalidField("placement.on", nil, "%v", err)
		}
	}
	return nil
}

// forwardLaunch hands a launch to the host placement chose and answers
// with that host's answer. The launch's environment travels with it, over
// the log's NATS, and is kept nowhere on the way; its placement travels as
// it was given (the host takes it as forwarded, and places it no further).
func (s *Server) forwardLaunch(w http.ResponseWriter, r *http.Request, host string, in wire.LaunchRequest) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout+5*time.Second)
	defer cancel()
	return s.relay(ctx, w, r, host, body, fmt.Sprintf("the launch placed on host %s", host))
}

// takeSlot takes a slot of the fleet-wide limit of the launch's agent kind
// for a launch that starts here at once (a queued one takes its slot when
// it starts), and returns how to give it back if the launch fails. The
// launch gets a seed, so that its execution id is known before it starts.
func (s *Server) takeSlot(ctx context.Context, in *wire.LaunchRequest) (release func(), err error) {
	none := func() {}
	if s.cfg.Fleet == nil || in.DispatchContext != nil && in.DispatchContext.DispatchMode.Waits() {
		return none, nil
	}
	if in.Seed == "" {
		in.Seed = randomSeed()
	}
	id, err := eventstore.NewAgentExecutionID(in.OwnerEntity, in.OwnerID, in.Seed)
	if err != nil {
		return none, invalidField("ownerId", nil, "%v", err)
	}
	switch err := s.cfg.Fleet.Acquire(ctx, in.Agent, id); {
	case errors.Is(err, fleet.ErrLimit):
		return none, conflict("%v; launch it with dispatch mode queued to wait for a slot", err)
	case err != nil:
		return none, err
	}
	return func() {
		if err := s.cfg.Fleet.Release(context.WithoutCancel(ctx), in.Agent, id); err != nil {
			s.cfg.Logger.Warn("give back the slot of a launch that failed", "execution", id, "err", err)
		}
	}, nil
}

// randomSeed is a seed for a launch that gave none, as the runtime would
// pick.
func randomSeed() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
