package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestDamagedLog: a block file of the log damaged as the fault trials
// damaged it (a lost tail, the block cut short, 64 bytes zeroed), with the
// daemon stopped. journal verify, log and log --json on the stopped data
// directory exit 1 naming what is missing; the daemon started on it finds
// the damage (at start, or by its read of every journal in the background
// for the hole that changes no count), says so in /healthz, refuses writes
// to the journals that lost records, and writes nothing to them itself: its
// recovery of runs left running skips them, so a journal whose end was lost
// is not ended again at the lost sequences.
func TestDamagedLog(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{fixtures.DamageTail, fixtures.DamageCut, fixtures.DamageFlip} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var ids []string
			for i := range 6 {
				ids = append(ids, demoID(t, dir, "seed-"+string(rune('a'+i))))
			}
			url, token, stop := startServe(t, dir)
			waitHealth(t, url, token, func(h map[string]any) bool { return h["lag"] == float64(0) && h["status"] == "ok" })
			lifecycles := map[string]any{}
			for _, id := range ids {
				_, e := call(t, "GET", url+"/v1/executions/"+id, token, nil)
				lifecycles[id] = e["lifecycle"]
			}
			stop()
			fixtures.DamageLog(t, dir, mode)

			for _, args := range [][]string{{"journal", "verify"}, {"log"}, {"log", "--json"}} {
				r := run(t, dir, args...)
				if r.code != exitError || !strings.Contains(r.stdout+r.stderr, "lacks") {
					t.Errorf("%v on the damaged log: exit %d, stdout %d bytes, stderr:\n%s\nwant exit 1 naming what is missing", args, r.code, len(r.stdout), r.stderr)
				}
			}
			before := heads(t, dir, ids)

			url, token, stop = startServe(t, dir)
			h := waitHealth(t, url, token, func(h map[string]any) bool { return h["status"] == "damaged" && len(namedIn(h, ids)) > 0 })
			hit := namedIn(h, ids)
			// A damaged journal takes no writes: the next one would take
			// the sequence of a record that was lost.
			for _, id := range hit {
				code, body := call(t, "POST", url+"/v1/executions/"+id+"/messages", token,
					map[string]any{"messageId": "after-damage", "type": "prompt", "payload": map[string]any{"text": "x"}})
				e, _ := body["error"].(map[string]any)
				if code != 500 || e["code"] != "damaged" || !strings.Contains(fmt.Sprint(e["message"]), "takes no writes") {
					t.Errorf("message to damaged journal %s: %d %v, want 500 code damaged saying it takes no writes", id, code, body)
				}
				if _, e := call(t, "GET", url+"/v1/executions/"+id, token, nil); e["lifecycle"] != lifecycles[id] {
					t.Errorf("execution %s is %v after the daemon's start on the damaged log, was %v", id, e["lifecycle"], lifecycles[id])
				}
			}
			if r := run(t, dir, "journal", "verify"); r.code != exitError {
				t.Errorf("journal verify through the daemon: exit %d\n%s%s\nwant 1", r.code, r.stdout, r.stderr)
			}
			stop()
			after := heads(t, dir, ids)
			for _, id := range hit {
				if after[id] != before[id] {
					t.Errorf("the daemon wrote to damaged journal %s: its last sequence went from %d to %d", id, before[id], after[id])
				}
			}
		})
	}
}

// namedIn returns the ids a /healthz answer's damage names.
func namedIn(h map[string]any, ids []string) []string {
	damaged, _ := h["damaged"].([]any)
	var hit []string
	for _, id := range ids {
		for _, d := range damaged {
			if strings.Contains(fmt.Sprint(d), "execution "+id) {
				hit = append(hit, id)
				break
			}
		}
	}
	return hit
}

// heads reads the last sequence the stopped log holds of each journal.
func heads(t *testing.T, dir string, ids []string) map[string]uint64 {
	t.Helper()
	b := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, b)
	last := map[string]uint64{}
	for _, id := range ids {
		// A journal that lost every record is gone from the log.
		ref, err := s.Lookup(t.Context(), id)
		h := ref
		if err == nil {
			h, err = s.Head(t.Context(), ref)
		}
		if err != nil && !errors.Is(err, eventstore.ErrJournalNotFound) {
			t.Fatal(err)
		}
		last[id] = h.LastSequence
	}
	if err := errors.Join(s.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	return last
}

// waitHealth polls /healthz, with the API token, until ok holds for its
// answer.
func waitHealth(t *testing.T, url, token string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, h := call(t, "GET", url+"/healthz", token, nil)
		if code == 200 && ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz: %d %v", code, h)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCommandBesideTheDaemon: a command that needs the data directory
// itself (run), run while the daemon serves it, says so and names what
// works instead, rather than the bare lock error. The commands that read
// or write journals go through the daemon instead (through_daemon_test.go).
func TestCommandBesideTheDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, _, _ := startServe(t, dir)
	r := run(t, dir, "run", "--", "/bin/true")
	if r.code != exitError {
		t.Fatalf("run beside the daemon: exit %d, want %d; stderr %q", r.code, exitError, r.stderr)
	}
	for _, want := range []string{"served by the agentjournal daemon at " + url, "launch runs an agent in the daemon as run does", "--nats-url"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
}
