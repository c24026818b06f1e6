package fleetbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// WriteText writes the report as an aligned table, one row per round,
// followed by what each round timed and the note on the CPUs shared.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "policy decisions by 1 to %d daemons on a %d-node cluster: %s\n", Nodes, Nodes, r.Host)
	fmt.Fprintf(&b, "%d embedded NATS servers clustered on loopback in one process, journal stream at %d replicas, a fresh cluster per round; "+
		"%d writers, %d journals, %d partitions, %d-byte summaries; the run took %s\n\n",
		Nodes, Nodes, r.Config.Writers, r.Config.Journals, r.Config.Partitions, r.TextBytes, r.Elapsed.Round(100*time.Millisecond))

	rows := [][]string{{"NAME", "DAEMONS", "COUNT", "ELAPSED", "RATE", "UNIT", "APPEND P50", "APPEND P99",
		"DECISION P50", "DECISION P99", "X ONE DAEMON", "X RAW", "BACKLOG/S", "X ONE DAEMON", "RETRIES", "MOVES", "RESTARTS"}}
	for _, res := range r.Results {
		unit, decP50, decP99, vsOne, vsRaw, moves, restarts := "appends/s", "-", "-", "-", "-", "-", "-"
		backlog, backlogVsOne := "-", "-"
		if res.Daemons > 0 {
			backlog, backlogVsOne = fmt.Sprintf("%.0f", res.BacklogPerSecond), ratio(res.BacklogVsOneDaemon)
			unit = "decisions/s"
			decP50, decP99 = millis(res.DecisionP50), millis(res.DecisionP99)
			vsOne, vsRaw = ratio(res.VsOneDaemon), ratio(res.VsRaw)
			moves, restarts = strconv.Itoa(res.Moves), strconv.Itoa(res.Restarts)
		}
		rows = append(rows, []string{
			res.Name,
			strconv.Itoa(res.Daemons),
			strconv.Itoa(res.Count),
			res.Elapsed.Round(time.Millisecond).String(),
			fmt.Sprintf("%.0f", res.PerSecond),
			unit,
			millis(res.AppendP50),
			millis(res.AppendP99),
			decP50,
			decP99,
			vsOne,
			vsRaw,
			backlog,
			backlogVsOne,
			strconv.Itoa(res.Retries),
			moves,
			restarts,
		})
	}
	// The unit is a word and reads best aligned left.
	benchkit.WriteTable(&b, rows, 5)

	b.WriteString("\nwhat was timed:\n")
	names, notes := make([]string, len(r.Results)), make([]string, len(r.Results))
	var setup []string
	for i, res := range r.Results {
		names[i], notes[i] = res.Name, res.Method
		s := fmt.Sprintf("%s %s", res.Name, res.Startup.Round(100*time.Millisecond))
		if res.Partitions > 0 {
			s += fmt.Sprintf(" + settle %s", res.Settle.Round(100*time.Millisecond))
		}
		setup = append(setup, s)
	}
	benchkit.WriteNotes(&b, names, notes)
	fmt.Fprintf(&b, "  (untimed set-up: cluster start and journals, then the group settling: %s)\n", strings.Join(setup, ", "))
	b.WriteString("  BACKLOG/S: then, with the subscribers' handlers held back, as many observations again are appended, and let go: " +
		"decisions per second from then to the last, the daemons' capacity rather than the writers' pace\n")
	b.WriteString("  DECISION: from an observation's append starting to its decision heard; RETRIES: appends sent again after an error; " +
		"MOVES: partition changes heard after the group settled; RESTARTS: subscribers started again after stopping on an error\n")
	b.WriteString("\n" + r.cpuNote() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// cpuNote says how the CPUs were shared, which decides what the figures
// can say about adding daemons.
func (r Report) cpuNote() string {
	if r.Config.DaemonCPU > 0 {
		var used []string
		for _, res := range r.Results {
			if res.Daemons > 0 {
				used = append(used, fmt.Sprintf("%s %s", res.Name, res.DaemonCPUTime.Round(10*time.Millisecond)))
			}
		}
		return fmt.Sprintf("note: each daemon ran as a process of its own limited to %v CPU by a Linux cpu control group, "+
			"as a daemon on a machine of its own is held to that machine's CPUs, so a daemon added brings CPU of its own; "+
			"the %d nodes and the writers shared the rest of this machine's %d CPUs (runtime.NumCPU()). "+
			"CPU time the daemons used: %s.", r.Config.DaemonCPU, Nodes, r.Host.CPUs, strings.Join(used, ", "))
	}
	return fmt.Sprintf("note: all %d nodes, every daemon and every writer share this machine's %d CPUs (runtime.NumCPU()): "+
		"a daemon added brings no CPU of its own here, so these figures say what sharing the deciding does on one machine, "+
		"not what daemons on machines of their own would do (Config.DaemonCPU gives each one a budget of its own).", Nodes, r.Host.CPUs)
}

// ratio formats a ratio of rates.
func ratio(v float64) string { return fmt.Sprintf("%.2fx", v) }

// jsonReport is the JSON form of a Report. Durations are seconds.
type jsonReport struct {
	benchkit.Host
	Started        time.Time    `json:"started"`
	ElapsedSeconds float64      `json:"elapsedSeconds"`
	Nodes          int          `json:"nodes"`
	TextBytes      int          `json:"textBytes"`
	Config         jsonConfig   `json:"config"`
	Results        []jsonResult `json:"results"`
}

type jsonConfig struct {
	Partitions          int     `json:"partitions"`
	Writers             int     `json:"writers"`
	Journals            int     `json:"journals"`
	Observations        int     `json:"observations"`
	RawAppends          int     `json:"rawAppends"`
	RoundTimeoutSeconds float64 `json:"roundTimeoutSeconds"`
	DaemonCPU           float64 `json:"daemonCPU"`
}

type jsonResult struct {
	Name               string  `json:"name"`
	Daemons            int     `json:"daemons"`
	Partitions         int     `json:"partitions"`
	Count              int     `json:"count"`
	Decided            int     `json:"decided,omitempty"`
	Writers            int     `json:"writers"`
	Journals           int     `json:"journals"`
	ElapsedSeconds     float64 `json:"elapsedSeconds"`
	PerSecond          float64 `json:"perSecond"`
	AppendP50Seconds   float64 `json:"appendP50Seconds"`
	AppendP99Seconds   float64 `json:"appendP99Seconds"`
	DecisionP50Seconds float64 `json:"decisionP50Seconds,omitempty"`
	DecisionP99Seconds float64 `json:"decisionP99Seconds,omitempty"`
	VsOneDaemon        float64 `json:"vsOneDaemon,omitempty"`
	VsRaw              float64 `json:"vsRaw,omitempty"`
	BacklogSeconds     float64 `json:"backlogSeconds,omitempty"`
	BacklogPerSecond   float64 `json:"backlogPerSecond,omitempty"`
	BacklogVsOneDaemon float64 `json:"backlogVsOneDaemon,omitempty"`
	Retries            int     `json:"retries"`
	Moves              int     `json:"moves"`
	Restarts           int     `json:"restarts"`
	StartupSeconds     float64 `json:"startupSeconds"`
	SettleSeconds      float64 `json:"settleSeconds,omitempty"`
	DaemonCPUSeconds   float64 `json:"daemonCPUSeconds,omitempty"`
	Method             string  `json:"method"`
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Host:           r.Host,
		Started:        r.Started,
		ElapsedSeconds: r.Elapsed.Seconds(),
		Nodes:          Nodes,
		TextBytes:      r.TextBytes,
		Config: jsonConfig{
			Partitions:          r.Config.Partitions,
			Writers:             r.Config.Writers,
			Journals:            r.Config.Journals,
			Observations:        r.Config.Observations,
			RawAppends:          r.Config.RawAppends,
			RoundTimeoutSeconds: r.Config.RoundTimeout.Seconds(),
			DaemonCPU:           r.Config.DaemonCPU,
		},
		Results: make([]jsonResult, len(r.Results)),
	}
	for i, res := range r.Results {
		out.Results[i] = jsonResult{
			Name:               res.Name,
			Daemons:            res.Daemons,
			Partitions:         res.Partitions,
			Count:              res.Count,
			Decided:            res.Decided,
			Writers:            res.Writers,
			Journals:           res.Journals,
			ElapsedSeconds:     res.Elapsed.Seconds(),
			PerSecond:          res.PerSecond,
			AppendP50Seconds:   res.AppendP50.Seconds(),
			AppendP99Seconds:   res.AppendP99.Seconds(),
			DecisionP50Seconds: res.DecisionP50.Seconds(),
			DecisionP99Seconds: res.DecisionP99.Seconds(),
			VsOneDaemon:        res.VsOneDaemon,
			VsRaw:              res.VsRaw,
			BacklogSeconds:     res.BacklogElapsed.Seconds(),
			BacklogPerSecond:   res.BacklogPerSecond,
			BacklogVsOneDaemon: res.BacklogVsOneDaemon,
			Retries:            res.Retries,
			Moves:              res.Moves,
			Restarts:           res.Restarts,
			StartupSeconds:     res.Startup.Seconds(),
			SettleSeconds:      res.Settle.Seconds(),
			DaemonCPUSeconds:   res.DaemonCPUTime.Seconds(),
			Method:             res.Method,
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
