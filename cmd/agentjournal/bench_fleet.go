package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/policy/fleetbench"
)

// fleetReport puts the fleet suite's report in the form of the others. It
// goes once fleetbench.Run returns a benchkit.Report itself.
func fleetReport(r fleetbench.Report) benchkit.Report {
	rep := benchkit.Report{
		Suite: "fleet",
		Title: fmt.Sprintf("policy decisions by 1 to %d daemons on a %d-node cluster", fleetbench.Nodes, fleetbench.Nodes),
		Setup: []string{fmt.Sprintf("%d embedded NATS servers clustered on loopback in one process, journal stream at %d replicas, a fresh cluster per round; "+
			"%d writers, %d journals, %d partitions, %d-byte summaries",
			fleetbench.Nodes, fleetbench.Nodes, r.Config.Writers, r.Config.Journals, r.Config.Partitions, r.TextBytes)},
		Host:    r.Host,
		Started: r.Started,
		Elapsed: r.Elapsed,
		Config: append(slices.DeleteFunc(benchkit.SettingsOf(r.Config), func(s benchkit.Setting) bool { return s.Name == "dir" }),
			benchkit.Setting{Name: "nodes", Value: fleetbench.Nodes}, benchkit.Setting{Name: "textBytes", Value: r.TextBytes}),
	}
	var setup []string
	for _, res := range r.Results {
		out := benchkit.Result{Name: res.Name, Count: res.Count, Elapsed: res.Elapsed, Rate: res.PerSecond, RateUnit: "appends/s",
			P50: res.AppendP50, P99: res.AppendP99, Method: res.Method}
		number := func(name string, v float64) benchkit.Figure { return benchkit.Figure{Name: name, Value: v} }
		ratio := func(name string, v float64) benchkit.Figure { return benchkit.Figure{Name: name, Value: v, Unit: "x"} }
		if res.Daemons == 0 {
			out.Figures = []benchkit.Figure{number("daemons", 0), number("writers", float64(res.Writers)), number("journals", float64(res.Journals)),
				number("retries", float64(res.Retries)), benchkit.Seconds("startup", res.Startup)}
		} else {
			out.RateUnit, out.Baseline, out.Ratio = "decisions/s", "raw/append", res.VsRaw
			out.Figures = []benchkit.Figure{number("daemons", float64(res.Daemons)), number("partitions", float64(res.Partitions)),
				number("decided", float64(res.Decided)), number("writers", float64(res.Writers)), number("journals", float64(res.Journals)),
				benchkit.Seconds("decision p50", res.DecisionP50), benchkit.Seconds("decision p99", res.DecisionP99),
				ratio("x one daemon", res.VsOneDaemon), number("backlog/s", res.BacklogPerSecond),
				benchkit.Seconds("backlog elapsed", res.BacklogElapsed), ratio("backlog x one daemon", res.BacklogVsOneDaemon),
				number("retries", float64(res.Retries)), number("moves", float64(res.Moves)), number("restarts", float64(res.Restarts)),
				benchkit.Seconds("startup", res.Startup), benchkit.Seconds("settle", res.Settle)}
			if r.Config.DaemonCPU > 0 {
				out.Figures = append(out.Figures, benchkit.Seconds("daemon cpu", res.DaemonCPUTime))
			}
		}
		rep.Results = append(rep.Results, out)
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
	}
	if r.Config.DaemonCPU > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("each daemon ran as a process of its own limited to %v CPU by a Linux cpu control group, "+
			"so a daemon added brings CPU of its own; the %d nodes and the writers shared the rest of this machine's %d CPUs (runtime.NumCPU())",
			r.Config.DaemonCPU, fleetbench.Nodes, r.Host.CPUs))
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("all %d nodes, every daemon and every writer share this machine's %d CPUs (runtime.NumCPU()): "+
			"a daemon added brings no CPU of its own here, so these figures say what sharing the deciding does on one machine, "+
			"not what daemons on machines of their own would do", fleetbench.Nodes, r.Host.CPUs))
	}
	return rep
}
