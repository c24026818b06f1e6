package hostbench

import (
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

// fixtureAgents are the fixture agent kept alive reading its stdin, for
// the messages, and the one that exits at once, for the launches.
func fixtureAgents(t *testing.T) (wait, exit []string) {
	t.Helper()
	bin := fixtures.AgentBinary(t)
	return []string{bin, "wait"}, []string{bin, "exit:0"}
}

func TestRunSmall(t *testing.T) {
	wait, exit := fixtureAgents(t)
	rep, progress := benchtest.RunSmall(t, 10*time.Second, Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Messages: 20, Launches: 6, Agent: wait, LaunchAgent: exit, Progress: progress}
	})

	type shape struct {
		Name     string
		Count    int
		Unit     string
		Baseline string
		Checks   []string
	}
	var got []shape
	for _, res := range rep.Results {
		var checks []string
		for _, c := range res.Checks {
			checks = append(checks, c.Metric)
		}
		got = append(got, shape{res.Name, res.Count, res.RateUnit, res.Baseline, checks})
	}
	want := []shape{
		{"message/local", 20, "messages/s", "", nil},
		{"message/routed", 20, "messages/s", "message/local", []string{"p99 ratio"}},
		{"launch/local", 6, "launches/s", "", nil},
		{"launch/remote", 6, "launches/s", "launch/local", []string{"forwarding adds at p50"}},
		{"launch/placed", 12, "launches/s", "", nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Elapsed <= 0 || res.Rate <= 0 || res.Method == "" {
			t.Errorf("%s: elapsed %s, %v %s, method %q; want a positive time and rate and what was timed", res.Name, res.Elapsed, res.Rate, res.RateUnit, res.Method)
		}
		if res.Name == nameLaunchPlaced {
			if res.P50 != 0 || res.P99 != 0 {
				t.Errorf("%s: p50 %s, p99 %s; want none (the latencies are launch/local's and launch/remote's)", res.Name, res.P50, res.P99)
			}
			continue
		}
		if res.P50 <= 0 || res.P99 < res.P50 {
			t.Errorf("%s: p50 %s, p99 %s; want both positive and p99 >= p50", res.Name, res.P50, res.P99)
		}
		if res.Baseline == "" {
			continue
		}
		p99Ratio, _ := res.Figure(figureP99Ratio)
		if math.IsNaN(p99Ratio) || math.IsInf(p99Ratio, 0) || p99Ratio <= 0 || res.Ratio <= 0 {
			t.Errorf("%s: p99 ratio %v, rate ratio %v; want finite positive numbers", res.Name, p99Ratio, res.Ratio)
		}
		if _, ok := res.Figure(figureAddsP50); !ok {
			t.Errorf("%s: no %q figure", res.Name, figureAddsP50)
		}
	}

	routed, _ := rep.Result(nameMessageRouted)
	p99, _ := routed.Check(checkP99Ratio)
	if p99Ratio, _ := routed.Figure(figureP99Ratio); p99.Target != 2 || !p99.Max || p99.Unit != "x" || p99.Value != p99Ratio {
		t.Errorf("message/routed: check %+v, p99 ratio %.2f; want that ratio judged against at most 2x", p99, p99Ratio)
	}
	remote, _ := rep.Result(nameLaunchRemote)
	local, _ := rep.Result(nameLaunchLocal)
	adds, _ := remote.Check(checkAddsP50)
	if want := (remote.P50 - local.P50).Seconds(); adds.Target != 0.05 || !adds.Max || adds.Unit != "s" || math.Abs(adds.Value-want) > 1e-9 {
		t.Errorf("launch/remote: check %+v; want %.4fs (its p50 less launch/local's) judged against at most 0.05s", adds, want)
	}
	for _, res := range rep.Results {
		if wantJudged := res.Name == nameMessageRouted || res.Name == nameLaunchRemote; (res.Verdict() != "") != wantJudged {
			t.Errorf("%s: verdict %q, want one only for the forwarded results with a target", res.Name, res.Verdict())
		}
	}
	if !slices.ContainsFunc(rep.Config, func(s benchkit.Setting) bool { return s.Name == "messages" && s.Value == 20 }) {
		t.Errorf("config %+v lacks messages=20", rep.Config)
	}
	benchtest.ProgressLines(t, progress, len(want))

	text, _ := benchtest.Reports(t, rep)
	for _, w := range []string{"[hosts] two daemons on one log", " P99 RATIO ", " ADDS AT P50 ", "forwarding adds at p50", "\nnotes:\n"} {
		if !strings.Contains(text, w) {
			t.Errorf("text report lacks %q:\n%s", w, text)
		}
	}
}

// TestTargets: message/routed's p99 and launch/remote's p50 are judged
// against their local results of the same run, PASS or BELOW.
func TestTargets(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	tests := []struct {
		name                     string
		routedP99, remoteP50     time.Duration
		routedVerdict, remoteVer string
		wantBelow                []string
	}{
		{name: "both met at the bound", routedP99: ms(20), remoteP50: ms(80), routedVerdict: "PASS", remoteVer: "PASS"},
		{name: "both missed", routedP99: ms(21), remoteP50: ms(81), routedVerdict: "BELOW", remoteVer: "BELOW",
			wantBelow: []string{nameMessageRouted, nameLaunchRemote}},
		{name: "forwarded faster than local", routedP99: ms(5), remoteP50: ms(20), routedVerdict: "PASS", remoteVer: "PASS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := []benchkit.Result{
				{Name: nameMessageLocal, Rate: 200, P50: ms(4), P99: ms(10)},
				{Name: nameMessageRouted, Rate: 100, P50: ms(8), P99: tt.routedP99, Baseline: nameMessageLocal},
				{Name: nameLaunchLocal, Rate: 30, P50: ms(30), P99: ms(60)},
				{Name: nameLaunchRemote, Rate: 20, P50: tt.remoteP50, P99: ms(120), Baseline: nameLaunchLocal},
				{Name: nameLaunchPlaced, Rate: 25},
			}
			compare(results)
			rep := benchkit.Report{Suite: "hosts", Results: results}
			routed, _ := rep.Result(nameMessageRouted)
			remote, _ := rep.Result(nameLaunchRemote)
			if got := routed.Verdict(); got != tt.routedVerdict {
				t.Errorf("message/routed: verdict %q with p99 %s against 10ms, want %q", got, tt.routedP99, tt.routedVerdict)
			}
			if got := remote.Verdict(); got != tt.remoteVer {
				t.Errorf("launch/remote: verdict %q with p50 %s against 30ms, want %q", got, tt.remoteP50, tt.remoteVer)
			}
			if routed.Ratio != 0.5 || remote.Ratio != 20.0/30 {
				t.Errorf("rate ratios %v and %v, want 0.5 and %v", routed.Ratio, remote.Ratio, 20.0/30)
			}
			if adds, _ := remote.Figure(figureAddsP50); math.Abs(adds-(tt.remoteP50-ms(30)).Seconds()) > 1e-9 {
				t.Errorf("launch/remote adds %vs at p50, want %vs", adds, (tt.remoteP50 - ms(30)).Seconds())
			}
			var below []string
			for _, res := range rep.Below() {
				below = append(below, res.Name)
			}
			if diff := cmp.Diff(tt.wantBelow, below); diff != "" {
				t.Errorf("Below (-want +got):\n%s", diff)
			}
			for _, res := range []string{nameMessageLocal, nameLaunchLocal, nameLaunchPlaced} {
				if r, _ := rep.Result(res); len(r.Checks) != 0 || len(r.Figures) != 0 {
					t.Errorf("%s: checks %+v, figures %+v; want none (no baseline)", res, r.Checks, r.Figures)
				}
			}
		})
	}
}

// inTurns swaps the order every pair and keeps each path's durations
// apart; an error stops it at once.
func TestInTurns(t *testing.T) {
	var calls []string
	path := func(name string, d time.Duration, failAt int) func(int) (time.Duration, error) {
		return func(i int) (time.Duration, error) {
			calls = append(calls, name)
			if i == failAt {
				return 0, errors.New(name + " failed")
			}
			return d, nil
		}
	}
	loc, fwd, err := inTurns(3, path("local", time.Millisecond, -1), path("forwarded", time.Second, -1))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"local", "forwarded", "forwarded", "local", "local", "forwarded"}, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(loc) != 3 || len(fwd) != 3 || slices.Max(loc) != time.Millisecond || slices.Min(fwd) != time.Second {
		t.Errorf("local %v, forwarded %v; want three of each, each path's own", loc, fwd)
	}
	calls = nil
	if _, _, err := inTurns(3, path("local", 0, -1), path("forwarded", 0, 1)); err == nil || err.Error() != "forwarded failed" || len(calls) != 3 {
		t.Errorf("inTurns with the second pair's first call failing: %v after %d calls, want that error after 3", err, len(calls))
	}
}

// TestRunDefaults runs the full benchmark with default sizes when
// HOSTBENCH_DEFAULTS=1, printing the report.
func TestRunDefaults(t *testing.T) {
	benchtest.RunDefaults(t, "HOSTBENCH_DEFAULTS", Run, func(dir string, progress io.Writer) Config {
		return Config{Dir: dir, Progress: progress}
	})
}

func TestConfigValidate(t *testing.T) {
	benchtest.Validates(t, Run, []benchtest.ConfigCase[Config]{
		{Name: "dir only", Config: Config{Dir: "x"}},
		{Name: "defaults", Config: func() Config { c := DefaultConfig(); c.Dir = "x"; return c }()},
		{Name: "no dir", Config: Config{}, Want: []string{"no Dir"}},
		{
			Name:   "every problem at once",
			Config: Config{Messages: -1, Launches: -2, Agent: []string{""}, LaunchAgent: []string{""}},
			Want:   []string{"no Dir", "Messages -1", "Launches -2", "Agent[0] is empty", "LaunchAgent[0] is empty"},
		},
	})
}
