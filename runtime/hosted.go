package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/durable"
	"github.com/agentjournal/agentjournal/supervisor"
)

// A runtime with a HostDir keeps a directory of its own there, named at
// random and holding a file "lock" that it keeps locked (flock) while it
// lives, and one file per execution it launched and has not seen end:
// <escaped execution id>.json holding the journal reference. After a crash
// of its process the lock is gone and the files name exactly the executions
// whose processes died unwatched. That is what several hosts sharing one
// log need (each recovers its own agents and leaves the others' running
// ones alone), and also several hosts sharing one HostDir, as two `run`
// commands on one data dir and a shared log do: a directory whose lock is
// held belongs to a live runtime and is never touched.

const (
	hostedSuffix = ".json"
	hostLockName = "lock"
)

// RecoverScope says which executions Recover considers.
type RecoverScope int

const (
	// RecoverHosted considers the executions that runtimes which used the
	// same HostDir launched, did not see end, and are gone. It is the only
	// safe scope when other hosts run agents on the same log.
	RecoverHosted RecoverScope = iota
	// RecoverAll considers every journal in the log. It is right only when
	// this runtime is the log's only host; it also finds executions
	// launched without a HostDir.
	RecoverAll
)

// host is this runtime's own directory in the HostDir, with its lock held.
type host struct {
	dir  string
	lock *os.File
}

// ownHost returns this runtime's host directory, creating and locking it on
// first use; nil without a HostDir.
func (rt *Runtime) ownHost() (*host, error) {
	if rt.cfg.HostDir == "" {
		return nil, nil
	}
	rt.hostMu.Lock()
	defer rt.hostMu.Unlock()
	if rt.host != nil {
		return rt.host, nil
	}
	if err := os.MkdirAll(rt.cfg.HostDir, 0o700); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(rt.cfg.HostDir, "host-")
	if err != nil {
		return nil, err
	}
	lock, ok, err := tryLock(filepath.Join(dir, hostLockName))
	if err != nil || !ok {
		return nil, errors.Join(fmt.Errorf("lock %s: %v", dir, err), os.RemoveAll(dir))
	}
	rt.host = &host{dir: dir, lock: lock}
	return rt.host, nil
}

// tryLock opens path (creating it) and takes an exclusive flock without
// waiting; ok is false when another process holds it.
func tryLock(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return f, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return nil, false, f.Close()
	default:
		return nil, false, errors.Join(err, f.Close())
	}
}

// unlock releases a lock taken by tryLock. The explicit unlock matters: a
// child process forked meanwhile shares the descriptor and would keep the
// lock past Close.
func unlock(f *os.File) error {
	return errors.Join(syscall.Flock(int(f.Fd()), syscall.LOCK_UN), f.Close())
}

// releaseHost removes this runtime's host directory when it names no
// execution, and lets go of its lock; files of executions whose end could
// not be recorded stay for the next Recover.
func (rt *Runtime) releaseHost() error {
	rt.hostMu.Lock()
	defer rt.hostMu.Unlock()
	h := rt.host
	if h == nil {
		return nil
	}
	rt.host = nil
	refs, err := readHosted(h.dir, rt.cfg.Logger)
	if err == nil && len(refs) == 0 {
		err = os.RemoveAll(h.dir)
	}
	return errors.Join(err, unlock(h.lock))
}

// markHosted records that this host runs ref's execution. It is synced to
// disk before the process starts: the crash it guards against may come at
// any moment after.
func (rt *Runtime) markHosted(ref eventstore.Reference) error {
	h, err := rt.ownHost()
	if h == nil || err != nil {
		return err
	}
	path, err := hostedFile(h.dir, ref.AgentExecutionID)
	if err != nil {
		return err
	}
	data, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, data, 0o600)
}

// unmarkHosted forgets the execution once its end is in the journal.
func (rt *Runtime) unmarkHosted(id string) {
	rt.hostMu.Lock()
	h := rt.host
	rt.hostMu.Unlock()
	if h == nil {
		return
	}
	path, err := hostedFile(h.dir, id)
	if err == nil {
		err = os.Remove(path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		rt.cfg.Logger.Warn("forget hosted execution", "execution", id, "err", err)
	}
}

// hostedAnywhere says whether a host directory in the HostDir, this
// runtime's or another's, names the execution: some runtime went as far as
// starting its process.
func (rt *Runtime) hostedAnywhere(id string) (bool, error) {
	if rt.cfg.HostDir == "" {
		return false, nil
	}
	entries, err := os.ReadDir(rt.cfg.HostDir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path, err := hostedFile(filepath.Join(rt.cfg.HostDir, e.Name()), id)
		if err != nil {
			return false, err
		}
		if _, err := os.Stat(path); err == nil {
			return true, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	return false, nil
}

func hostedFile(dir, id string) (string, error) {
	esc, err := eventstore.EscapeID(id)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, esc+hostedSuffix), nil
}

// readHosted returns the references a host directory names. A file that
// does not hold one is reported and left for a person to look at.
func readHosted(dir string, log *slog.Logger) ([]eventstore.Reference, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var refs []eventstore.Reference
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), hostedSuffix) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var ref eventstore.Reference
		if err := json.Unmarshal(data, &ref); err != nil || ref.AgentExecutionID == "" || ref.JournalID == "" {
			log.Warn("skip a hosted-execution file that names no journal", "path", path, "err", err)
			continue
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// orphanHost is the directory of a runtime that is gone, locked by the
// runtime recovering it.
type orphanHost struct {
	dir  string
	lock *os.File
	refs []eventstore.Reference
}

// orphanHosts locks and reads the host directories of runtimes that are
// gone. The caller recovers their executions and calls done.
func (rt *Runtime) orphanHosts() ([]*orphanHost, error) {
	entries, err := os.ReadDir(rt.cfg.HostDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var orphans []*orphanHost
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(rt.cfg.HostDir, e.Name())
		rt.hostMu.Lock()
		own := rt.host != nil && rt.host.dir == dir
		rt.hostMu.Unlock()
		if own {
			continue
		}
		lock, ok, err := tryLock(filepath.Join(dir, hostLockName))
		if err != nil {
			releaseOrphans(orphans, false)
			return nil, err
		}
		if !ok {
			continue // its runtime is alive
		}
		refs, err := readHosted(dir, rt.cfg.Logger)
		if err != nil {
			releaseOrphans(append(orphans, &orphanHost{dir: dir, lock: lock}), false)
			return nil, err
		}
		orphans = append(orphans, &orphanHost{dir: dir, lock: lock, refs: refs})
	}
	return orphans, nil
}

// releaseOrphans lets go of the orphan directories, removing them when
// every execution they named was dealt with.
func releaseOrphans(orphans []*orphanHost, recovered bool) error {
	var errs []error
	for _, o := range orphans {
		if recovered {
			errs = append(errs, os.RemoveAll(o.dir))
		}
		errs = append(errs, unlock(o.lock))
	}
	return errors.Join(errs...)
}

// Recover marks every execution of scope whose journal says it is still
// starting or running, but which has no live process here, as terminated
// with reason system_restart: its process died while nothing watched it.
// A supervised execution is attached to instead (supervised.go): it is live
// here again, and ends when its process does. It returns the ids it marked.
func (rt *Runtime) Recover(ctx context.Context, scope RecoverScope) ([]string, error) {
	if scope != RecoverHosted && scope != RecoverAll {
		return nil, fmt.Errorf("recover: unknown scope %d (want RecoverHosted or RecoverAll)", scope)
	}
	if scope == RecoverHosted && rt.cfg.HostDir == "" {
		return nil, errors.New("recover: RecoverHosted needs a runtime with a HostDir")
	}
	// The directories of gone runtimes are dealt with in either scope,
	// so that they do not pile up.
	var orphans []*orphanHost
	if rt.cfg.HostDir != "" {
		var err error
		if orphans, err = rt.orphanHosts(); err != nil {
			return nil, fmt.Errorf("recover: %w", err)
		}
	}
	var refs []eventstore.Reference
	if scope == RecoverAll {
		all, err := rt.cfg.Store.Journals(ctx)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("recover: %w", err), releaseOrphans(orphans, false))
		}
		refs = all
	} else {
		for _, o := range orphans {
			refs = append(refs, o.refs...)
		}
	}
	// A run a gone runtime marked hosted had its start under way, queued
	// or not: it is recovered, not left to the queue.
	hosted := map[string]bool{}
	for _, o := range orphans {
		for _, r := range o.refs {
			hosted[r.AgentExecutionID] = true
		}
	}
	ids, err := rt.recover(ctx, refs, hosted)
	return ids, errors.Join(err, releaseOrphans(orphans, err == nil))
}

// refuser is a store that refuses writes to journals found damaged
// (eventstore.JetStreamStore with a Refuse).
type refuser interface {
	Refused(ref eventstore.Reference) error
}

func (rt *Runtime) recover(ctx context.Context, refs []eventstore.Reference, hosted map[string]bool) ([]string, error) {
	var recovered []string
	for _, ref := range refs {
		rt.mu.Lock()
		_, live := rt.live[ref.AgentExecutionID]
		rt.mu.Unlock()
		if live {
			continue
		}
		if r, ok := rt.cfg.Store.(refuser); ok {
			if err := r.Refused(ref); err != nil {
				// Found damaged before the recovery: its journal may read
				// whole with its end lost, and an interruption or an end
				// appended now would take the lost records' sequences and
				// hide the damage for good.
				rt.cfg.Logger.Error("recover: skip a damaged journal", "execution", ref.AgentExecutionID, "err", err)
				continue
			}
		}
		st, err := rt.replay(ctx, ref)
		var undecodable *eventstore.OffsetError
		if errors.Is(err, eventstore.ErrGap) || errors.As(err, &undecodable) {
			// A damaged journal (records missing, or one that does not
			// decode) is left as it is, for a person to restore: appending
			// to it would build on a hole, or on a state that misses what
			// the record said. The others go on.
			rt.cfg.Logger.Error("recover: skip a damaged journal", "execution", ref.AgentExecutionID, "err", err)
			continue
		}
		if err != nil {
			return recovered, err
		}
		if st.Journal.RecordCount == 0 {
			// Only a hosted file can name a journal the log lacks (a
			// log wiped or replaced under the data dir).
			rt.cfg.Logger.Warn("forget a hosted execution whose journal is not in the log", "execution", ref.AgentExecutionID, "journal", ref.JournalID)
			continue
		}
		if st.Lifecycle.Final() && hosted[ref.AgentExecutionID] && st.LifecycleReason == hostLostReason {
			// Ended by the fleet while this host was gone: an agent of it
			// that ran on here is stopped, not attached to, since the run
			// may go on elsewhere as a resume.
			rt.stopLeftover(ctx, ref)
			continue
		}
		if st.Lifecycle.Final() || rt.queued(ref.AgentExecutionID) || neverStarted(st) && !hosted[ref.AgentExecutionID] {
			// A queued run that has not started is the queue's to start
			// (Requeue), not an orphan.
			continue
		}
		attached, err := rt.attach(ctx, ref, st)
		if err != nil {
			rt.cfg.Logger.Error("recover: attach to the supervised agent", "execution", ref.AgentExecutionID, "err", err)
		}
		if attached {
			rt.cfg.Logger.Info("attached to an agent that ran on while its host was gone", "execution", ref.AgentExecutionID)
			continue
		}
		// Before the undelivered messages are settled: the interruption
		// names the one being delivered.
		if err := rt.recordInterruption(ctx, ref, eventstore.InterruptSystemRestart, "the host stopped while the run was live, and its process is gone"); err != nil {
			return recovered, fmt.Errorf("recover %s: %w", ref.AgentExecutionID, err)
		}
		if err := rt.failUndelivered(ctx, ref); err != nil {
			return recovered, fmt.Errorf("recover %s: %w", ref.AgentExecutionID, err)
		}
		if err := rt.appendState(ref, "lifecycle:final", &eventstore.StateChanged{Lifecycle: eventstore.LifecycleTerminated,
			Attention: eventstore.AttentionNone, CurrentInputRequestID: eventstore.ClearInputRequest(), Reason: "system_restart"}); err != nil {
			return recovered, fmt.Errorf("recover %s: %w", ref.AgentExecutionID, err)
		}
		recovered = append(recovered, ref.AgentExecutionID)
	}
	return recovered, nil
}

// failUndelivered gives every message the journal accepted but never
// recorded an outcome for (the host died between the two) a failed
// delivery: whoever sent it learns that the agent did not get it, instead
// of waiting on an outcome that will never come. Recover only reaches
// executions whose host is gone, so no other outcome can follow.
func (rt *Runtime) failUndelivered(ctx context.Context, ref eventstore.Reference) error {
	return rt.settleUndelivered(ctx, ref, eventstore.DeliveryFailed, eventstore.TransportNone,
		"system_restart: the host stopped before delivering it, and the agent's process is gone")
}

// settleUndelivered gives every message the journal accepted without an
// outcome the delivery status given.
func (rt *Runtime) settleUndelivered(ctx context.Context, ref eventstore.Reference, status eventstore.DeliveryStatus, transport eventstore.DeliveryTransport, reason string) error {
	var pending []string
	open := map[string]bool{}
	for e, err := range rt.cfg.Store.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return err
		}
		switch r := e.Record.(type) {
		case *eventstore.MessageAccepted:
			if !open[r.MessageID] {
				open[r.MessageID] = true
				pending = append(pending, r.MessageID)
			}
		case *eventstore.MessageDelivery:
			delete(open, r.MessageID)
		}
	}
	for _, id := range pending {
		if !open[id] {
			continue
		}
		d := &eventstore.MessageDelivery{MessageID: id, Status: status, Transport: transport, Reason: reason}
		if _, err := rt.cfg.Store.Append(ctx, ref, d); err != nil {
			return fmt.Errorf("record the delivery of %s: %w", id, err)
		}
	}
	return nil
}

// CodeHostReturned is the code of the diagnostic journaled when a host
// comes back after its lease and stops an agent of an execution the fleet
// ended meanwhile.
const CodeHostReturned = "host-returned"

// hostLostReason is the lifecycle reason of an execution the fleet ended
// because its host was lost. Persisted: never change it.
const hostLostReason = "host_lost"

// stopLeftover stops the supervised agent of an execution the fleet ended
// while its host was gone, if it ran on, and journals what happened: a
// diagnostic observation saying that it ran on and was stopped (after the
// end, it moves nothing). Nothing is started again.
func (rt *Runtime) stopLeftover(ctx context.Context, ref eventstore.Reference) {
	id := ref.AgentExecutionID
	defer rt.forgetLaunch(id)
	if rt.cfg.Supervisor == nil || rt.cfg.SupervisedDir == "" {
		return
	}
	dir, err := rt.supervisedPath(id, "")
	if err != nil {
		return
	}
	h, err := supervisor.Attach(dir)
	if err != nil {
		return
	}
	defer h.Close()
	if !h.Alive() {
		return
	}
	pid := h.AgentPID()
	sctx, cancel := context.WithTimeout(ctx, rt.cfg.StopGrace)
	defer cancel()
	_ = h.Signal(sctx, syscall.SIGTERM)
	if _, err := h.Wait(sctx); err != nil {
		_ = h.Signal(context.WithoutCancel(ctx), syscall.SIGKILL)
	}
	detail := fmt.Sprintf("host %s came back after its lease: the agent (process %d) had run on after the fleet ended this execution, and was stopped; anything it did since is not journaled", rt.cfg.Host, pid)
	rt.cfg.Logger.Warn("stopped an agent the fleet had ended while its host was gone", "execution", id, "pid", pid)
	o := &eventstore.Observation{ObservationID: "host-returned-" + randomHex(4), Source: eventstore.ObservedDaemon,
		Confidence: eventstore.ConfidenceDiagnostic, Signal: eventstore.NewSignal(&eventstore.DiagnosticSignal{Code: CodeHostReturned, Message: detail}),
		Payload: map[string]any{"host": rt.cfg.Host, "pid": pid}}
	if _, err := rt.cfg.Store.Append(ctx, ref, o); err != nil {
		rt.cfg.Logger.Error("journal the stop of an agent that ran on", "execution", id, "err", err)
	}
}

// EndLost ends the executions that host, a host of the fleet now lost,
// ran and that no process here runs: each gets an interruption
// (system_restart, its detail naming the host) and the end terminated,
// with reason host_lost, once its messages in flight are settled as
// failed. The records' ids derive from the lost process's instance, so a
// second member ending the same ones appends nothing twice. A journal that
// ended meanwhile, or that names another host, is left alone. It returns
// the ids it ended.
func (rt *Runtime) EndLost(ctx context.Context, host, instance string, lease time.Duration, refs []eventstore.Reference) ([]string, error) {
	var ended []string
	for _, ref := range refs {
		if rt.IsRunning(ref.AgentExecutionID) {
			continue
		}
		st, err := rt.replay(ctx, ref)
		if err != nil {
			return ended, fmt.Errorf("end %s of lost host %s: %w", ref.AgentExecutionID, host, err)
		}
		if st.Lifecycle.Final() || st.Host != host {
			continue
		}
		key := "host-lost:" + instance
		detail := fmt.Sprintf("host %s, which ran it, was not heard from for longer than its lease (%s)", host, lease)
		if err := rt.recordInterruptionAs(ctx, ref, key, eventstore.InterruptSystemRestart, detail); err != nil {
			return ended, err
		}
		if err := rt.settleUndelivered(ctx, ref, eventstore.DeliveryFailed, eventstore.TransportNone,
			"host_lost: host "+host+" was lost before delivering it"); err != nil {
			return ended, fmt.Errorf("end %s of lost host %s: %w", ref.AgentExecutionID, host, err)
		}
		if err := rt.appendState(ref, key, &eventstore.StateChanged{Lifecycle: eventstore.LifecycleTerminated,
			Attention: eventstore.AttentionNone, CurrentInputRequestID: eventstore.ClearInputRequest(), Reason: hostLostReason}); err != nil {
			return ended, fmt.Errorf("end %s of lost host %s: %w", ref.AgentExecutionID, host, err)
		}
		ended = append(ended, ref.AgentExecutionID)
	}
	return ended, nil
}
