package fleetbench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Suite is the name the bench command knows this suite by.
const Suite = "fleet"

// result is the round as a row of the report: its rate, the append
// latency as P50 and P99, its ratio to raw/append, and the rest as
// figures.
func (res round) result(cfg Config) benchkit.Result {
	out := benchkit.Result{Name: res.Name, Count: res.Count, Elapsed: res.Elapsed, Rate: res.PerSecond, RateUnit: "appends/s",
		P50: res.AppendP50, P99: res.AppendP99, Method: res.Method}
	number := func(name string, v int) benchkit.Figure { return benchkit.Figure{Name: name, Value: float64(v)} }
	ratio := func(name string, v float64) benchkit.Figure { return benchkit.Figure{Name: name, Value: v, Unit: "x"} }
	if res.Daemons == 0 {
		out.Figures = []benchkit.Figure{number("daemons", 0), number("writers", res.Writers), number("journals", res.Journals),
			number("retries", res.Retries), benchkit.Seconds("startup", res.Startup)}
		return out
	}
	out.RateUnit, out.Baseline, out.Ratio = "decisions/s", nameRawAppend, res.VsRaw
	out.Figures = []benchkit.Figure{number("daemons", res.Daemons), number("partitions", res.Partitions),
		number("decided", res.Decided), number("writers", res.Writers), number("journals", res.Journals),
		benchkit.Seconds("decision p50", res.DecisionP50), benchkit.Seconds("decision p99", res.DecisionP99),
		ratio("x one daemon", res.VsOneDaemon), {Name: "backlog/s", Value: res.BacklogPerSecond},
		benchkit.Seconds("backlog elapsed", res.BacklogElapsed), ratio("backlog x one daemon", res.BacklogVsOneDaemon),
		number("retries", res.Retries), number("moves", res.Moves), number("restarts", res.Restarts),
		benchkit.Seconds("startup", res.Startup), benchkit.Seconds("settle", res.Settle)}
	// policy/whole-log runs before policy/1-daemon: its progress line
	// comes before its ratios to it are known.
	out.Figures = slices.DeleteFunc(out.Figures, func(f benchkit.Figure) bool { return f.Unit == "x" && f.Value == 0 })
	if cfg.DaemonCPU > 0 {
		out.Figures = append(out.Figures, benchkit.Seconds("daemon cpu", res.DaemonCPUTime))
	}
	return out
}

// report is the suite's report of the rounds.
func report(cfg Config, host benchkit.Host, started time.Time, rounds []round) benchkit.Report {
	rep := benchkit.Report{
		Suite: Suite,
		Title: fmt.Sprintf("policy decisions by 1 to %d daemons on a %d-node cluster", Nodes, Nodes),
		Setup: []string{fmt.Sprintf("%d embedded NATS servers clustered on loopback in one process, journal stream at %d replicas, a fresh cluster per round; "+
			"%d writers, %d journals, %d partitions, %d-byte summaries", Nodes, Nodes, cfg.Writers, cfg.Journals, cfg.Partitions, textBytes)},
		Host:    host,
		Started: started,
		Elapsed: time.Since(started),
		Config: append(benchkit.SettingsOf(cfg),
			benchkit.Setting{Name: "nodes", Value: Nodes}, benchkit.Setting{Name: "textBytes", Value: textBytes}),
	}
	var setup []string
	for _, res := range rounds {
		rep.Results = append(rep.Results, res.result(cfg))
		s := fmt.Sprintf("%s %s", res.Name, res.Startup.Round(100*time.Millisecond))
		if res.Partitions > 0 {
			s += fmt.Sprintf(" + settle %s", res.Settle.Round(100*time.Millisecond))
		}
		setup = append(setup, s)
	}
	rep.Notes = []string{
		fmt.Sprintf("untimed set-up: cluster start and journals, then the group settling: %s", strings.Join(setup, ", ")),
		"BACKLOG/S: then, with the subscribers' handlers held back, as many observations again are appended, and let go: " +
			"decisions per second from then to the last, the daemons' capacity rather than the writers' pace",
		"P50, P99: an append's latency; DECISION: from an observation's append starting to its decision heard; RETRIES: appends sent again after an error; " +
			"MOVES: partition changes heard after the group settled; RESTARTS: subscribers started again after stopping on an error",
		cpuNote(cfg, host),
	}
	return rep
}

// cpuNote says how the CPUs were shared, which decides what the figures
// can say about adding daemons.
func cpuNote(cfg Config, host benchkit.Host) string {
	if cfg.DaemonCPU > 0 {
		return fmt.Sprintf("each daemon ran as a process of its own limited to %v CPU by a Linux cpu control group, "+
			"as a daemon on a machine of its own is held to that machine's CPUs, so a daemon added brings CPU of its own; "+
			"the %d nodes and the writers shared the rest of this machine's %d CPUs (runtime.NumCPU()); DAEMON CPU: the CPU time the daemons used",
			cfg.DaemonCPU, Nodes, host.CPUs)
	}
	return fmt.Sprintf("all %d nodes, every daemon and every writer share this machine's %d CPUs (runtime.NumCPU()): "+
		"a daemon added brings no CPU of its own here, so these figures say what sharing the deciding does on one machine, "+
		"not what daemons on machines of their own would do (--daemon-cpu gives each one a budget of its own)", Nodes, host.CPUs)
}
