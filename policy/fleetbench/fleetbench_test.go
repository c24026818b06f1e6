package fleetbench

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/internal/benchkit/benchtest"
)

// smallConfig is a run small enough for a test: 200 observations and raw
// appends from 8 writers to 12 journals, over 6 partitions.
func smallConfig(dir string) Config {
	return Config{Dir: dir, Partitions: 6, Writers: 8, Journals: 12, Observations: 200, RawAppends: 200}
}

func TestFleetRunSmall(t *testing.T) {
	dir := benchtest.Scratch(t, 10*time.Second)
	// A hang fails the test rather than stalling it: each round is bounded
	// too.
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	cfg := smallConfig(dir)
	cfg.RoundTimeout, cfg.Progress = time.Minute, &progress
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}

	type shape struct {
		Name    string
		Daemons float64
		Count   int
		Decided float64
	}
	var got []shape
	for _, res := range rep.Results {
		got = append(got, shape{res.Name, figure(t, res, "daemons"), res.Count, figureOr(res, "decided")})
	}
	// Every policy round heard a decision on each of its observations.
	want := []shape{{"raw/append", 0, 200, 0}, {"policy/whole-log", 1, 200, 200}, {"policy/1-daemon", 1, 200, 200}, {"policy/2-daemons", 2, 200, 200}, {"policy/3-daemons", 3, 200, 200}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
	for _, res := range rep.Results {
		if res.Elapsed <= 0 || res.Rate <= 0 || res.P50 <= 0 || res.P99 < res.P50 {
			t.Errorf("%s: elapsed %s, %v/s, append p50 %s, p99 %s; want all positive and p99 >= p50",
				res.Name, res.Elapsed, res.Rate, res.P50, res.P99)
		}
		if figure(t, res, "daemons") > 0 {
			p50, p99 := figure(t, res, "decision p50"), figure(t, res, "decision p99")
			vsOne := figure(t, res, "x one daemon")
			if p50 <= 0 || p99 < p50 || vsOne <= 0 || res.Ratio <= 0 || res.Baseline != "raw/append" || res.RateUnit != "decisions/s" {
				t.Errorf("%s: decision p50 %v, p99 %v, %.2fx one daemon, %.2fx %s in %s; want all positive, p99 >= p50, against raw/append, decisions/s",
					res.Name, p50, p99, vsOne, res.Ratio, res.Baseline, res.RateUnit)
			}
			if figure(t, res, "backlog elapsed") <= 0 || figure(t, res, "backlog/s") <= 0 || figure(t, res, "backlog x one daemon") <= 0 {
				t.Errorf("%s: backlog figures %v; want all positive", res.Name, res.Figures)
			}
		}
		if res.Method == "" {
			t.Errorf("%s: no description of what was timed", res.Name)
		}
	}
	if one, _ := rep.Result("policy/1-daemon"); figure(t, one, "x one daemon") != 1 {
		t.Errorf("policy/1-daemon is %vx itself, want 1", figure(t, one, "x one daemon"))
	}
	// A ratio not known yet is left out of a progress line, not shown as 0.
	if strings.Contains(progress.String(), " 0.00x") || !strings.Contains(progress.String(), "x one daemon 1.00x") {
		t.Errorf("progress shows a ratio of 0, or none to one daemon:\n%s", progress.String())
	}
	benchtest.ProgressLines(t, progress.String(), len(want))
	if rep.Suite != Suite || len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "share this machine's "+strconv.Itoa(runtime.NumCPU())+" CPUs") {
		t.Errorf("suite %q, notes %q; want %q and a note on the CPUs shared", rep.Suite, rep.Notes, Suite)
	}
	settings := map[string]any{}
	for _, st := range rep.Config {
		settings[st.Name] = st.Value
	}
	if settings["observations"] != 200 || settings["partitions"] != 6 || settings["nodes"] != Nodes || settings["dir"] != nil {
		t.Errorf("settings %v; want observations 200, partitions 6, nodes %d and no dir", settings, Nodes)
	}

	// The common writers take it.
	text, _ := benchtest.Reports(t, rep)
	for _, w := range []string{"raw/append", "policy/whole-log", "policy/3-daemons", "decisions/s", "BACKLOG/S"} {
		if !strings.Contains(text, w) {
			t.Errorf("text report lacks %q:\n%s", w, text)
		}
	}
}

// TestFleetRunFailsCleanly: a round that cannot finish in time fails the run,
// and leaves no cluster, directory or goroutine behind.
func TestFleetRunFailsCleanly(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cfg := smallConfig(dir)
	cfg.RoundTimeout = 300 * time.Millisecond
	_, err := Run(ctx, cfg)
	if err == nil {
		t.Fatal("Run with a round timeout too short to start a cluster succeeded, want an error")
	}
	benchtest.EmptyDir(t, dir, "after a failed Run")
	// A cluster cut off while it starts can leave a raft group's log
	// store running inside nats-server (v2.15.2, raft.go initRaftNode):
	// when the server's system account goes away, as it does in a
	// shutdown, while a group's node is being made, the node is marked
	// closed without stopping the store made for its log, which only the
	// node's run loop, never started, would stop. Nothing outside the
	// server holds that store. Its flush loop, and the clock service every
	// open store keeps registered, are that store's, not the run's.
	benchtest.WaitGoroutinesExcept(t, before, 10*time.Second,
		"nats-server/v2/server.(*fileStore).flushStreamStateLoop",
		"nats-server/v2/server/ats.Register.func1")
}

// TestFleetRunStopsMidRound: a run stopped while its subscribers decide
// fails, and stops its subscribers, servers and writers and removes its
// directories all the same.
func TestFleetRunStopsMidRound(t *testing.T) {
	dir := benchtest.Scratch(t, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// raw/append's progress line comes as the first policy round starts:
	// a few seconds later its writers are appending and its subscriber
	// deciding.
	var once sync.Once
	progress := writerFunc(func(p []byte) (int, error) {
		once.Do(func() { time.AfterFunc(3*time.Second, cancel) })
		return len(p), nil
	})
	cfg := smallConfig(dir)
	cfg.Observations, cfg.RawAppends, cfg.RoundTimeout, cfg.Progress = 1_000_000, 50, time.Minute, progress
	if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), "policy/whole-log") {
		t.Fatalf("Run stopped in policy/whole-log = %v, want that round's error", err)
	}
}

// TestFleetRunDefaults runs the full benchmark with default sizes when
// FLEETBENCH_DEFAULTS=1, printing the report; it takes about a minute and a
// half. FLEETBENCH_DAEMON_CPU sets Config.DaemonCPU.
func TestFleetRunDefaults(t *testing.T) {
	benchtest.RunDefaults(t, "FLEETBENCH_DEFAULTS", Run, func(dir string, progress io.Writer) Config {
		var cpu float64
		if s := os.Getenv("FLEETBENCH_DAEMON_CPU"); s != "" {
			var err error
			if cpu, err = strconv.ParseFloat(s, 64); err != nil {
				t.Fatalf("FLEETBENCH_DAEMON_CPU: %v", err)
			}
		}
		return Config{Dir: dir, Progress: progress, DaemonCPU: cpu}
	})
}

func TestFleetConfigValidate(t *testing.T) {
	benchtest.Validates(t, Run, []benchtest.ConfigCase[Config]{
		{Name: "dir only", Config: Config{Dir: "x"}},
		{Name: "defaults", Config: func() Config { c := DefaultConfig(); c.Dir = "x"; return c }()},
		{Name: "no dir", Config: Config{}, Want: []string{"fleetbench: no Dir"}},
		{Name: "too few partitions", Config: Config{Dir: "x", Partitions: 2}, Want: []string{"Partitions 2 is out of range (want 3 to 1024"}},
		{Name: "daemon cpu", Config: Config{Dir: "x", DaemonCPU: 0.25}},
		{Name: "negative daemon cpu", Config: Config{Dir: "x", DaemonCPU: -1}, Want: []string{"DaemonCPU -1 is out of range (want 0.01 to 64 CPUs, or 0"}},
		{Name: "daemon cpu too small", Config: Config{Dir: "x", DaemonCPU: 0.001}, Want: []string{"DaemonCPU 0.001 is too small to schedule"}},
		{Name: "daemon cpu not a number", Config: Config{Dir: "x", DaemonCPU: math.NaN()}, Want: []string{"DaemonCPU NaN is out of range"}},
		{
			Name:   "every negative size at once",
			Config: Config{Dir: "x", Partitions: -1, Writers: -2, Journals: -3, Observations: -4, RawAppends: -5, RoundTimeout: -time.Second},
			Want: []string{
				"fleetbench: Partitions -1 is negative (want 1 or more, or 0 for 12)",
				"fleetbench: Writers -2 is negative (want 1 or more, or 0 for 64)",
				"fleetbench: Journals -3 is negative",
				"fleetbench: Observations -4 is negative",
				"fleetbench: RawAppends -5 is negative",
				"fleetbench: RoundTimeout -1s is negative",
			},
		},
	})
}

// TestFleetGroupEven: the group counts as settled only once every member holds
// its even share and the shares cover every partition once.
func TestFleetGroupEven(t *testing.T) {
	g := newGroup(6, 0)
	g.members = []string{"a", "b", "c"}
	steps := []struct {
		member string
		parts  []int
		want   bool
	}{
		{"a", []int{0, 1, 2, 3, 4, 5}, false},
		{"b", []int{2, 3}, false}, // a still holds 2 and 3
		{"a", []int{0, 1, 4, 5}, false},
		{"c", []int{4, 5}, false}, // a still holds 4 and 5
		{"a", []int{0, 1}, true},
	}
	for i, s := range steps {
		g.owned(s.member, s.parts)
		if got := g.even(); got != s.want {
			t.Errorf("step %d (%s holds %v): even() = %t, want %t", i, s.member, s.parts, got, s.want)
		}
	}
	g.owned("c", []int{4})
	if g.moves != 1 {
		t.Errorf("moves = %d after a change once settled, want 1", g.moves)
	}
}

// writerFunc is an io.Writer that calls itself.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestMain runs this test binary as a member process when a round with
// DaemonCPU starts it as one.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == MemberCommand {
		os.Exit(MemberMain())
	}
	os.Exit(m.Run())
}

// TestFleetRunDaemonProcesses: with DaemonCPU, each round's subscribers are
// processes of their own, limited by a control group, and still decide on
// every observation; they and their groups are gone afterwards. Where
// control groups cannot be made, the run says so and leaves nothing.
func TestFleetRunDaemonProcesses(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cfg := smallConfig(dir)
	cfg.RoundTimeout, cfg.DaemonCPU = time.Minute, 0.5
	rep, err := Run(ctx, cfg)
	if limitErr := CanLimitCPU(); limitErr != nil {
		if err == nil || !strings.Contains(err.Error(), "control group") {
			t.Fatalf("Run with DaemonCPU where control groups cannot be made (%v) = %v, want an error naming the control group", limitErr, err)
		}
		benchtest.EmptyDir(t, dir, "after a refused Run")
		return
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, res := range rep.Results {
		if figure(t, res, "daemons") == 0 {
			continue
		}
		if decided, cpu := figure(t, res, "decided"), figure(t, res, "daemon cpu"); decided != 200 || cpu <= 0 || !strings.Contains(res.Method, "process of its own limited to 0.5 CPU") {
			t.Errorf("%s: decided %v, member CPU %vs, method %q; want 200 decided by member processes that used CPU",
				res.Name, decided, cpu, res.Method)
		}
	}
	benchtest.EmptyDir(t, dir, "after Run")
	parent, _, err := ownCPUGroup()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := filepath.Glob(filepath.Join(parent, "agentjournal-fleetbench-"+strconv.Itoa(os.Getpid())+"-*"))
	if err != nil || len(groups) > 0 {
		t.Errorf("control groups left behind: %v (%v)", groups, err)
	}
}

// figure is res's figure of the given name, failing the test without it.
func figure(t *testing.T, res benchkit.Result, name string) float64 {
	t.Helper()
	v, ok := res.Figure(name)
	if !ok {
		t.Fatalf("%s has no figure %q: %v", res.Name, name, res.Figures)
	}
	return v
}

// figureOr is res's figure of the given name, 0 without it.
func figureOr(res benchkit.Result, name string) float64 {
	v, _ := res.Figure(name)
	return v
}

// TestFleetReportRows: the rounds print in the common form,
// with every figure its own report shows.
func TestFleetReportRows(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rounds := []round{
		{Name: "raw/append", Count: 3000, Writers: 64, Journals: 120, Elapsed: time.Second, PerSecond: 3000,
			AppendP50: ms(2), AppendP99: ms(9), Retries: 1, Startup: time.Second, Method: "appends"},
		{Name: "policy/2-daemons", Daemons: 2, Partitions: 12, Count: 600, Decided: 600, Writers: 64, Journals: 120,
			Elapsed: 2 * time.Second, PerSecond: 300, AppendP50: ms(3), AppendP99: ms(12), DecisionP50: ms(20), DecisionP99: ms(80),
			BacklogElapsed: time.Second, BacklogPerSecond: 600, BacklogVsOneDaemon: 1.5, VsOneDaemon: 1.4, VsRaw: 0.1,
			Moves: 2, Restarts: 0, Startup: time.Second, Settle: ms(500), Method: "decisions"},
	}
	var b strings.Builder
	if err := benchkit.WriteText(&b, report(DefaultConfig(), benchkit.Here(), time.Now(), rounds)); err != nil {
		t.Fatal(err)
	}
	var row string
	for line := range strings.Lines(b.String()) {
		if strings.HasPrefix(line, "policy/2-daemons ") {
			row = strings.Join(strings.Fields(line), " ")
			break
		}
	}
	want := "policy/2-daemons 600 2s 300 decisions/s 3ms 12ms 0.10x raw/append 2 12 600 64 120 20ms 80ms 1.40x 600 1s 1.50x 0 2 0 1s 500ms"
	if row != want {
		t.Errorf("row %q, want %q:\n%s", row, want, b.String())
	}
	for _, head := range []string{"DAEMONS", "RETRIES", "DECISION P99", "X ONE DAEMON", "BACKLOG/S", "BACKLOG X ONE DAEMON", "MOVES", "RESTARTS"} {
		if !strings.Contains(b.String(), head) {
			t.Errorf("no column %s:\n%s", head, b.String())
		}
	}
}
