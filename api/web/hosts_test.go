package web_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/daemon"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/fleet"
)

// twoHosts starts two daemons on one log, as `serve --nats-url` joins a
// fleet: alpha on an embedded NATS that listens, beta joined to it by URL.
// editAlpha, when given, edits alpha's configuration last.
func twoHosts(t *testing.T, editAlpha ...func(*daemon.Config)) (alpha, beta *apitest.Stack) {
	t.Helper()
	alpha = apitest.Start(t, apitest.Options{Daemon: func(c *daemon.Config) {
		c.HostName, c.Lease, c.Labels = "alpha", 2*time.Second, map[string]string{"role": "runner"}
		c.Bus.Listen, c.Bus.Secret = "127.0.0.1:0", fixtures.NATSSecret
		for _, edit := range editAlpha {
			edit(c)
		}
	}})
	beta = apitest.Start(t, apitest.Options{Daemon: func(c *daemon.Config) {
		c.HostName, c.Lease = "beta", 2*time.Second
		c.Bus.URL, c.Bus.Secret = alpha.Bus.ClientURL(), fixtures.NATSSecret
	}})
	return alpha, beta
}

// joinHost makes a host named name on s's log over a connection of its
// own, as another daemon's membership would be, and waits until seen
// sees it live.
func joinHost(t *testing.T, s, seen *apitest.Stack, name string, edit func(*fleet.Config)) (*fleet.Fleet, func()) {
	t.Helper()
	nc, js := fixtures.ConnectJetStream(t, s.Bus, "")
	cfg := fleet.Config{Conn: nc, JS: js, Stream: s.Bus.StreamName(), Name: name, Lease: 500 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	f, err := fleet.Join(t.Context(), cfg)
	if err != nil {
		t.Fatalf("join %s: %v", name, err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	waitLive(t, seen, name)
	return f, nc.Close
}

// waitLive waits until seen sees the host named name live.
func waitLive(t *testing.T, seen *apitest.Stack, name string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m, ok := seen.Daemon.Fleet().Member(name); ok && m.State == fleet.Live {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never saw host %s live", seen.Daemon.Fleet().Name(), name)
		}
	}
}

// hostsShown is a JavaScript expression for the hosts screen's rows:
// "name state" each, in the order shown.
const hostsShown = `[...document.querySelectorAll('#hosts-body tr')].map((tr) => tr.dataset.host + ' ' + tr.dataset.state)`

// The console of one host of a fleet lists every host the log knows, each
// in its state (live, lost, left, each drawn differently), with its load,
// labels and what runs there, and follows them while it is open; the
// executions list and an execution's page name each execution's host, and
// mark the one that is not the daemon serving the console, whose running
// execution is still stopped from here.
func TestHostsView(t *testing.T) {
	b := newBrowser(t)
	alpha, beta := twoHosts(t)
	a, s := stackOf(alpha), stackOf(beta)
	// gamma dies without a last word (its connection closes) and is lost
	// after its lease; delta closes and says it left. The log keeps both
	// their last heartbeats, and what ran on gamma.
	_, kill := joinHost(t, alpha, beta, "gamma", func(c *fleet.Config) {
		c.Labels = map[string]string{"gpu": "1", "note": hostile}
		c.Status = func() fleet.Status {
			return fleet.Status{Capacity: fleet.Capacity{MaxRunning: 4, Running: 1}, Running: []string{"ae-gamma-1"}}
		}
	})
	kill()
	delta, _ := joinHost(t, alpha, beta, "delta", nil)
	if err := delta.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	onAlpha := a.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-alpha", "agent": "generic", "command": []string{a.agent, "sleep:60s"}})
	onBeta := s.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-beta", "agent": "generic", "command": []string{s.agent, "sleep:60s"}})

	b.signIn(t, s)
	b.watchPolicy(t)
	t.Run("the list names each execution's host", func(t *testing.T) {
		row := func(id string) string {
			return fmt.Sprintf(`document.querySelector('#executions-body tr[data-id=%q]')`, id)
		}
		b.waitFor(t, 20*time.Second, "both executions with their hosts", fmt.Sprintf(`(() => { const a = %s, b = %s;
			return a !== null && b !== null && a.dataset.host === 'alpha' && b.dataset.host === 'beta' })()`, row(onAlpha), row(onBeta)))
		if got := b.text(t, fmt.Sprintf(`#executions-body tr[data-id=%q] td.host .host-elsewhere`, onAlpha)); got != "on alpha" {
			t.Errorf("alpha's execution is tagged %q, want on alpha", got)
		}
		if got := b.text(t, fmt.Sprintf(`#executions-body tr[data-id=%q] td.host`, onBeta)); got != "beta" {
			t.Errorf("beta's execution shows host %q, want beta, untagged", got)
		}
		if n := eval[int](t, b, fmt.Sprintf(`%s.querySelectorAll('.host-elsewhere').length`, row(onBeta))); n != 0 {
			t.Errorf("beta's execution is tagged as elsewhere in beta's console")
		}
	})

	t.Run("the hosts, each in its state", func(t *testing.T) {
		b.do(t, chromedp.Click(chromedp.CSS("#nav-hosts")))
		want := []string{"alpha live", "beta live", "delta left", "gamma lost"}
		b.waitFor(t, 20*time.Second, "every host in its state", fmt.Sprintf(`!document.getElementById('hosts-view').hidden && JSON.stringify(%s) === %q`,
			hostsShown, `["`+strings.Join(want, `","`)+`"]`))
		cell := func(host, part string) string {
			return b.text(t, fmt.Sprintf(`#hosts-body tr[data-host=%q] td.%s`, host, part))
		}
		// What runs there comes with the host's next heartbeat.
		b.waitFor(t, 20*time.Second, "each live host's execution", fmt.Sprintf(
			`document.querySelector('#hosts-body tr[data-host="alpha"] td.host-executions a[data-id=%q]') !== null && `+
				`document.querySelector('#hosts-body tr[data-host="beta"] td.host-executions a[data-id=%q]') !== null`, onAlpha, onBeta))
		if got := cell("beta", "host-name"); got != "beta this daemon" {
			t.Errorf("beta's name reads %q, want it marked as this daemon", got)
		}
		if got := cell("alpha", "host-name"); got != "alpha" {
			t.Errorf("alpha's name reads %q, want it unmarked", got)
		}
		if got := cell("alpha", "host-labels"); got != "role=runner" {
			t.Errorf("alpha's labels read %q, want role=runner", got)
		}
		if got := cell("alpha", "host-heard"); !regexp.MustCompile(`^(just now|\d s ago)$`).MatchString(got) {
			t.Errorf("alpha was last heard %q, want seconds ago at most", got)
		}
		if got := cell("gamma", "host-load"); got != "1 / 4" {
			t.Errorf("gamma's load reads %q, want 1 / 4", got)
		}
		if got := cell("gamma", "host-executions"); got != "ae-gamma-1" {
			t.Errorf("gamma ran %q, want ae-gamma-1 as of its last heartbeat", got)
		}
		if got := eval[[]string](t, b, `[...document.querySelectorAll('#hosts-body tr[data-host="gamma"] .label')].map((l) => l.textContent)`); !slices.Equal(got, []string{"gpu=1", "note=" + hostile}) {
			t.Errorf("gamma's labels read %q, want gpu=1 and the note as text", got)
		}
		var hosts client.Hosts
		s.call(t, "GET", "/v1/hosts", nil, &hosts)
		wantMemory := "—"
		if m := hosts.Hosts[0]; m.MemoryTotal > 0 {
			wantMemory = `^[\d.]+ [KMGT]?i?B of [\d.]+ [KMGT]?i?B$`
		}
		if got := cell("alpha", "host-memory"); !regexp.MustCompile(wantMemory).MatchString(got) {
			t.Errorf("alpha's free memory reads %q, want %s (the daemon says %d of %d)", got, wantMemory, hosts.Hosts[0].MemoryFree, hosts.Hosts[0].MemoryTotal)
		}
		if info := b.text(t, "#hosts-info"); info != "4 hosts as host beta sees them: 2 live, 1 lost, 1 left." {
			t.Errorf("the hosts screen says %q", info)
		}
		// Each state is drawn its own way.
		colours := eval[[]string](t, b, `['alpha', 'delta', 'gamma'].map((h) => getComputedStyle(document.querySelector('#hosts-body tr[data-host="' + h + '"] .badge')).backgroundColor)`)
		if colours[0] == colours[1] || colours[0] == colours[2] || colours[1] == colours[2] {
			t.Errorf("the live, left and lost badges are %q, want three colours", colours)
		}
		b.waitFor(t, 5*time.Second, "nothing of the labels to run", inert("#hosts-view"))
		os.WriteFile("/tmp/hosts.png", b.screenshot(t, "hosts"), 0o644)
	})

	t.Run("the hosts follow what runs", func(t *testing.T) {
		b.waitFor(t, 5*time.Second, "the hosts screen", `!document.getElementById('hosts-view').hidden`)
		another := a.launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-alpha", "agent": "generic", "command": []string{a.agent, "sleep:60s"}})
		b.waitFor(t, 20*time.Second, "alpha's new execution, unasked", fmt.Sprintf(
			`document.querySelector('#hosts-body tr[data-host="alpha"] td.host-executions a[data-id=%q]') !== null && `+
				`document.querySelector('#hosts-body tr[data-host="alpha"] td.host-load').textContent.startsWith('2 / ')`, another))
	})

	t.Run("an execution's page names its host and stops it there", func(t *testing.T) {
		b.click(t, fmt.Sprintf(`#hosts-body tr[data-host="alpha"] td.host-executions a[data-id=%q]`, onAlpha))
		b.waitFor(t, 20*time.Second, "the execution on alpha", fmt.Sprintf(
			`!document.getElementById('execution-view').hidden && document.getElementById('exec-id').textContent === %q && `+
				`document.getElementById('exec-running').textContent === 'process on alpha'`, onAlpha))
		if got := b.text(t, "#exec-host"); got != "Runs on host alpha, not the daemon serving this console: commands given here are forwarded there" {
			t.Errorf("the execution's host reads %q", got)
		}
		b.stop(t)
		b.waitFor(t, 20*time.Second, "the stop, done on alpha", `document.getElementById('exec-lifecycle').textContent !== 'running' && `+
			`document.getElementById('exec-host').textContent === 'Ran on host alpha, not the daemon serving this console'`)
		if !eval[bool](t, b, `document.getElementById('exec-stop').hidden`) {
			t.Error("the Stop button is still shown after the execution ended")
		}
		var stopped struct{ Lifecycle string }
		a.call(t, "GET", "/v1/executions/"+onAlpha, nil, &stopped)
		if stopped.Lifecycle == "running" || stopped.Lifecycle == "starting" {
			t.Errorf("alpha says its execution is %s after the stop through beta's console", stopped.Lifecycle)
		}

		b.openExecution(t, onBeta)
		b.waitFor(t, 10*time.Second, "beta's execution's host", `document.getElementById('exec-host').textContent === 'Runs on host beta (this daemon)'`)
	})
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}

// The launch form of beta's console runs a launch on alpha: picked by
// name, by a label only alpha has, or by an environment profile only alpha
// has; it says that alpha took it, checks labels as the fleet does before
// asking, and shows the daemon's refusal when no host fits.
func TestLaunchPlacement(t *testing.T) {
	b := newBrowser(t)
	alpha, beta := twoHosts(t, func(c *daemon.Config) {
		c.EnvProfiles = map[string][]string{"deploy": {"DEPLOY_TOKEN=t0k-secret"}}
	})
	a, s := stackOf(alpha), stackOf(beta)
	waitLive(t, beta, "alpha")
	var hosts client.Hosts
	s.call(t, "GET", "/v1/hosts", nil, &hosts)
	limit := map[string]int{}
	for _, h := range hosts.Hosts {
		limit[h.Name] = h.MaxRunning
	}
	hostChoice := func(host string, running int) string {
		self := ""
		if host == "beta" {
			self = " (this daemon)"
		}
		return fmt.Sprintf("%s%s — %d / %d running", host, self, running, limit[host])
	}

	b.signIn(t, s)
	b.watchPolicy(t)
	options := func(id string) string {
		return fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('#%s option')].map((o) => [o.value, o.textContent]))`, id)
	}
	// launch fills in the form as a person would, over what the last
	// launch left, and sends it.
	launch := func(t *testing.T, fields map[string]string) {
		t.Helper()
		values := map[string]string{"launch-owner-entity": "Task", "launch-agent": "generic", "launch-host": "", "launch-labels": "", "launch-profile": ""}
		for k, v := range fields {
			values[k] = v
		}
		b.setFields(t, values)
		b.click(t, "#launch-submit")
	}
	// launched waits for the page of the execution a launch made, and
	// returns its id.
	launched := func(t *testing.T, owner string) string {
		t.Helper()
		b.waitFor(t, 20*time.Second, "the launched execution's page", fmt.Sprintf(`location.hash.startsWith('#/executions/ae-') && `+
			`!document.getElementById('execution-view').hidden && document.getElementById('exec-owner').textContent.startsWith('Task/%s ')`, owner))
		return eval[string](t, b, `decodeURIComponent(location.hash.slice('#/executions/'.length))`)
	}
	// runsOn checks that the execution's process runs on alpha, not on
	// beta whose console launched it, and that both the form and the
	// execution's page say so.
	runsOn := func(t *testing.T, id string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !a.rt.IsRunning(id); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never ran on alpha", id)
			}
		}
		if s.rt.IsRunning(id) {
			t.Errorf("%s runs on beta too", id)
		}
		var ex struct{ Host string }
		a.call(t, "GET", "/v1/executions/"+id, nil, &ex)
		if ex.Host != "alpha" {
			t.Errorf("%s's state names host %q, want alpha", id, ex.Host)
		}
		b.waitFor(t, 20*time.Second, "the execution's host", `document.getElementById('exec-host').textContent === `+
			`'Runs on host alpha, not the daemon serving this console: commands given here are forwarded there'`)
		if got, want := b.text(t, "#launch-result"), "Started "+id+" on alpha."; got != want {
			t.Errorf("after the launch the form says %q, want %q", got, want)
		}
		b.click(t, ".exec-head .back")
		b.waitFor(t, 10*time.Second, "the list", `!document.getElementById('list-view').hidden`)
		if !eval[bool](t, b, `!document.getElementById('launch-result').hidden`) {
			t.Error("the form does not show which host took the last launch")
		}
	}
	command := shellQuote(s.agent) + " sleep:60s"

	t.Run("the form offers every live host with its load, and the profiles they have", func(t *testing.T) {
		want := fmt.Sprintf(`[["","any host"],["alpha",%q],["beta",%q]]`, hostChoice("alpha", 0), hostChoice("beta", 0))
		b.waitFor(t, 20*time.Second, "the hosts offered", options("launch-host")+` === `+strconv.Quote(want))
		if got := eval[string](t, b, options("launch-profile")); got != `[["","none"],["deploy","deploy (alpha)"]]` {
			t.Errorf("the form offers profiles %s, want none and alpha's deploy", got)
		}
		if got := eval[string](t, b, `document.getElementById('launch-host').value`); got != "" {
			t.Errorf("the form picks host %q at first, want any host", got)
		}
	})

	t.Run("a host picked by name", func(t *testing.T) {
		launch(t, map[string]string{"launch-owner-id": "t-named", "launch-command": command, "launch-host": "alpha"})
		id := launched(t, "t-named")
		runsOn(t, id)
		// The load offered is read again as the host is about to be picked.
		b.waitFor(t, 20*time.Second, "alpha's load with its execution", `(() => {
			const s = document.getElementById('launch-host'); s.dispatchEvent(new FocusEvent('focus'));
			return [...s.options].some((o) => o.value === 'alpha' && o.textContent === `+strconv.Quote(hostChoice("alpha", 1))+`) })()`)
	})

	t.Run("a host found by a label only it has", func(t *testing.T) {
		launch(t, map[string]string{"launch-owner-id": "t-labelled", "launch-command": command, "launch-labels": "role=runner"})
		runsOn(t, launched(t, "t-labelled"))
	})

	t.Run("a host found by a profile only it has", func(t *testing.T) {
		launch(t, map[string]string{"launch-owner-id": "t-profiled", "launch-command": command, "launch-profile": "deploy"})
		runsOn(t, launched(t, "t-profiled"))
	})

	t.Run("a label the fleet would refuse is refused before asking", func(t *testing.T) {
		launch(t, map[string]string{"launch-owner-id": "t-refused", "launch-command": command, "launch-labels": "role=runner gpu"})
		b.waitFor(t, 10*time.Second, "the refusal", `!document.getElementById('launch-error').hidden`)
		msg := b.text(t, "#launch-error")
		for _, want := range []string{`label "gpu": want key=value, the key 1 to 63 of [A-Za-z0-9_.-]`, "Field: placement.on"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the form says %q, want it to say %q", msg, want)
			}
		}
		if eval[bool](t, b, `document.querySelector('#launch-error .error-code') !== null`) {
			t.Errorf("the form says %q: the daemon was asked", msg)
		}
		if !eval[bool](t, b, `document.getElementById('launch-labels').getAttribute('aria-invalid') === 'true'`) {
			t.Error("the labels field is not marked")
		}
		if !eval[bool](t, b, `document.getElementById('launch-result').hidden`) {
			t.Error("the form still tells of the last launch beside the refusal")
		}
	})

	t.Run("a launch no host fits is refused in the daemon's words", func(t *testing.T) {
		launch(t, map[string]string{"launch-owner-id": "t-nowhere", "launch-command": command, "launch-labels": `role=runner "gpu=two cards"`})
		b.waitFor(t, 10*time.Second, "the refusal", `!document.getElementById('launch-error').hidden`)
		msg := b.text(t, "#launch-error")
		for _, want := range []string{"no live host of the fleet can run this launch now", "alpha: it has no label gpu=two cards", "503 unavailable"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the form says %q, want it to say %q", msg, want)
			}
		}
		if !eval[bool](t, b, `document.getElementById('list-view').hidden === false`) {
			t.Error("a refused launch left the list")
		}
	})
	b.checkPolicy(t)
	b.checkNoExceptions(t)
}
