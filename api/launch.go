package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
)

// timeoutAccepted says what a launch's timeout may be.
const timeoutAccepted = "want a duration such as 90s, 30m or 2h, more than 0 and at most 168h (7 days)"

// launchTimeout is the launch's time limit, 0 for none.
func launchTimeout(in *wire.LaunchRequest) (time.Duration, error) {
	if in.Timeout == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(in.Timeout)
	switch {
	case err != nil:
		return 0, invalidField("timeout", nil, "%q is not a duration (%s)", in.Timeout, timeoutAccepted)
	case d <= 0 || d > runtime.MaxTimeout:
		return 0, invalidField("timeout", nil, "%q is out of range (%s)", in.Timeout, timeoutAccepted)
	}
	return d, nil
}

// validateLaunch refuses a launch whose fields the runtime would not
// take, naming the first field at fault, and returns its environment as
// NAME=value, sorted.
func validateLaunch(in *wire.LaunchRequest) (env []string, err error) {
	switch {
	case in.OwnerEntity == "":
		return nil, invalidField("ownerEntity", strs(eventstore.OwnerEntities), "required")
	case !slices.Contains(eventstore.OwnerEntities, in.OwnerEntity):
		return nil, invalidField("ownerEntity", strs(eventstore.OwnerEntities), "%q is not accepted", in.OwnerEntity)
	case in.OwnerID == "":
		return nil, invalidField("ownerId", nil, "required")
	case len(in.OwnerID) > eventstore.MaxIDLength:
		return nil, invalidField("ownerId", nil, "%d bytes (want at most %d)", len(in.OwnerID), eventstore.MaxIDLength)
	case len(in.Seed) > eventstore.MaxIDLength:
		return nil, invalidField("seed", nil, "%d bytes (want at most %d)", len(in.Seed), eventstore.MaxIDLength)
	case in.Agent == "":
		return nil, invalidField("agent", runtime.Adapters(), "required")
	case !slices.Contains(runtime.Adapters(), in.Agent):
		return nil, invalidField("agent", runtime.Adapters(), "%q is not accepted", in.Agent)
	case in.Agent == "generic" && len(in.Command) == 0:
		return nil, invalidField("command", nil, "required for the generic agent (the program and its arguments)")
	case len(in.Command) > 0 && in.Command[0] == "":
		return nil, invalidField("command[0]", nil, "empty (want the program)")
	case in.Posture != "" && !slices.Contains(eventstore.Postures, in.Posture):
		return nil, invalidField("posture", strs(eventstore.Postures), "%q is not accepted", in.Posture)
	case in.Shape != "" && !slices.Contains(eventstore.SessionShapes, in.Shape):
		return nil, invalidField("shape", strs(eventstore.SessionShapes), "%q is not accepted", in.Shape)
	}
	if in.Dir != "" {
		if !filepath.IsAbs(in.Dir) {
			return nil, invalidField("dir", nil, "%q is not an absolute path", in.Dir)
		}
		if info, err := os.Stat(in.Dir); err != nil || !info.IsDir() {
			return nil, invalidField("dir", nil, "%q is not a directory", in.Dir)
		}
	}
	if env, err = checkEnv(in.Env); err != nil {
		return nil, err
	}
	if d := in.DispatchContext; d != nil {
		var verr *eventstore.ValidationError
		if err := d.Validate(); errors.As(err, &verr) && len(verr.Problems) > 0 {
			// The first problem names the field, as every launch field is
			// answered; the message lists them all.
			parts := make([]string, len(verr.Problems))
			for i, p := range verr.Problems {
				parts[i] = p.String()
			}
			e := invalidField(verr.Problems[0].Field, nil, "invalid dispatch context: %s", strings.Join(parts, "; "))
			e.accepted = verr.Problems[0].Accepted
			return nil, e
		}
	}
	return env, nil
}

// launch: POST /v1/executions. The state in the answer is replayed from
// the journal, so it holds the launch whatever the projection's lag; the
// answer waits for the projection to hold it too.
func (s *Server) launch(w http.ResponseWriter, r *http.Request) error {
	var in wire.LaunchRequest
	if err := s.decodeRequest(w, r, &in, false); err != nil {
		return err
	}
	waits := in.DispatchContext != nil && in.DispatchContext.DispatchMode.Waits()
	if err := checkPlacement(in.Placement); err != nil {
		return err
	}
	if s.cfg.Fleet != nil && !routed(r.Context()) && !waits {
		// A launch that waits is placed when it starts, by the fleet's
		// queue, where its placement goes with it.
		host, err := s.place(&in)
		if err != nil {
			return err
		}
		if host != s.cfg.Fleet.Name() {
			return s.forwardLaunch(w, r, host, in)
		}
	}
	if s.cfg.Fleet != nil {
		if err := s.cfg.Fleet.Room(); err != nil {
			return unavailable("%v: it starts no work now; launch on another host (placement) or free memory here", err)
		}
	}
	env, err := validateLaunch(&in)
	if err != nil {
		return err
	}
	timeout, err := launchTimeout(&in)
	if err != nil {
		return err
	}
	if in.Posture != "" && in.Posture != eventstore.PostureStructuredHeadless && s.cfg.Terminals == nil {
		return conflict("posture %s needs a terminal lane, and this daemon runs none (launch with posture %s)", in.Posture, eventstore.PostureStructuredHeadless)
	}
	// Once begun, a launch completes even if the client goes away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), mutationTimeout)
	defer cancel()
	if in.Seed != "" {
		id, err := eventstore.NewAgentExecutionID(in.OwnerEntity, in.OwnerID, in.Seed)
		if err != nil {
			return invalidField("ownerId", nil, "%v", err)
		}
		switch _, err := s.cfg.Store.Lookup(ctx, id); {
		case err == nil:
			return conflict("execution %s already exists: seed %q of %s/%s names it (launch with another seed, or with none)", id, in.Seed, in.OwnerEntity, in.OwnerID)
		case !errors.Is(err, eventstore.ErrJournalNotFound):
			return err
		}
	}
	release, err := s.takeSlot(ctx, &in)
	if err != nil {
		return err
	}
	req := runtime.LaunchRequest{
		OwnerEntity: in.OwnerEntity, OwnerID: in.OwnerID, Seed: in.Seed, Agent: in.Agent, Command: in.Command,
		Prompt: in.Prompt, Posture: in.Posture, Shape: in.Shape, Dir: in.Dir, Env: env, Timeout: timeout,
		Dispatch: in.DispatchContext, EnvProfile: in.EnvProfile,
	}
	if p := in.Placement; p != nil {
		req.Placement = runtime.SharedPlacement{Host: p.Host, On: p.On}
	}
	if sb := in.Sandbox; sb != nil {
		req.Sandbox = &runtime.SandboxRequest{Enabled: sb.Enabled, Network: sb.Network, Write: sb.Write}
	}
	ref, err := s.cfg.Runtime.Launch(ctx, req)
	if err != nil {
		release()
		if errors.Is(err, runtime.ErrNoProfile) {
			return invalidField("envProfile", s.cfg.Runtime.Profiles(), "%v", err)
		}
		if errors.Is(err, runtime.ErrBadLaunch) {
			return invalidField("shape", strs(eventstore.SessionShapes), "%v", err)
		}
		if e := startRefused(&in, err); e != nil {
			return e
		}
		return s.failedLaunch(ctx, ref, err)
	}
	return s.launched(ctx, w, r, ref)
}

// startRefused words a launch whose program could not be started as the
// request's mistake, naming the field at fault: the program given as
// command, or, when none was given, the agent whose CLI is not installed
// here. nil when err is no such failure.
func startRefused(in *wire.LaunchRequest, err error) *apiError {
	var why string
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		why = "is not installed on this host (not found on the daemon's PATH)"
	case errors.Is(err, fs.ErrPermission):
		why = "is not a program this daemon may run (permission denied)"
	case errors.Is(err, syscall.ENOEXEC):
		why = "is not a program this host can run (not an executable format)"
	default:
		return nil
	}
	if len(in.Command) > 0 {
		return invalidField("command", nil, "the program %q %s: %v (want the path of an executable file, or a program on the daemon's PATH)", in.Command[0], why, err)
	}
	return invalidField("agent", runtime.Adapters(), "the %s agent's CLI %s: %v (install it on this host, give its program as command, or launch another agent)", in.Agent, why, err)
}

// launchIncompleteKey is the natural key of the state record that closes a
// launch the runtime gave up on after its header may have been written.
// Persisted in record ids: never change it.
const launchIncompleteKey = "lifecycle:launch-incomplete"

// failedLaunch answers a launch that failed, saying what the journal holds.
// A header append whose answer was lost (a cluster electing a leader, a log
// that stopped answering) may have been stored after all, and an execution
// with only its header would read as starting forever. So a journal still
// starting, with no process here, is closed as failed before answering.
func (s *Server) failedLaunch(ctx context.Context, ref eventstore.Reference, cause error) error {
	id := ref.AgentExecutionID
	if id == "" || s.live(id).Running {
		return launchError(id, cause, "")
	}
	st, err := s.replayState(ctx, ref)
	switch {
	case errors.Is(err, eventstore.ErrJournalNotFound):
		return launchError(id, cause, "nothing of it was recorded")
	case err != nil:
		return launchError(id, cause, fmt.Sprintf("whether its journal was created is unknown (%v)", err))
	case st.Lifecycle != eventstore.LifecycleStarting:
		return launchError(id, cause, fmt.Sprintf("its journal records it as %s", st.Lifecycle))
	}
	fail := &eventstore.StateChanged{Lifecycle: eventstore.LifecycleFailed, Reason: "the launch did not complete: " + cause.Error()}
	fail.RecordID = eventstore.RecordID(eventstore.JournalIDFor(ref.OwnerEntity, ref.OwnerID, id), eventstore.KindStateChanged, launchIncompleteKey)
	a, ok := s.cfg.Store.(appender)
	if !ok {
		return launchError(id, cause, "its journal holds only the header")
	}
	if _, err := a.Append(ctx, ref, fail); err != nil {
		return launchError(id, cause, fmt.Sprintf("its journal holds the header, and recording the failure failed too (%v)", err))
	}
	return launchError(id, cause, "its journal records it as failed")
}

// appender is the one write the API makes to the log itself, found on the
// store by type assertion: the runtime writes everything else.
type appender interface {
	Append(ctx context.Context, ref eventstore.Reference, r eventstore.Record) (eventstore.Entry, error)
}

// launchError words a failed launch: a log that did not answer is a 503
// the client may retry, anything else the error it is.
func launchError(id string, cause error, journal string) error {
	if journal != "" {
		cause = fmt.Errorf("%w; no process was started and %s", cause, journal)
	}
	var ae *apiError
	switch {
	case errors.As(cause, &ae):
		return cause
	case errors.Is(cause, eventstore.ErrUnavailable):
		return unavailable("launch of %s failed: %v", id, cause)
	}
	if mapped := toAPIError(cause); mapped.code != wire.CodeInternal {
		return mapped
	}
	// The daemon's own failure, not the request's: still a 500, but one
	// that says what failed, since the person launching has no other way
	// to learn it than the daemon's log.
	return &apiError{status: http.StatusInternalServerError, code: wire.CodeInternal,
		message: clip(fmt.Sprintf("launch of %s failed: %v", orUnnamed(id), cause), maxCauseLength)}
}

// maxCauseLength bounds the cause a failed launch's answer quotes.
const maxCauseLength = 2000

// orUnnamed is an execution's id, or words for a launch that got none.
func orUnnamed(id string) string {
	if id == "" {
		return "a new execution"
	}
	return id
}
