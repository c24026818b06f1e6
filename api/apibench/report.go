package apibench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// WriteText writes the report as an aligned table, one row per result,
// followed by what each result timed.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP API vs journal store: %s\n", r.Host)
	fmt.Fprintf(&b, "%d agents (%s), %d-byte texts; one run, latencies over every operation; the run took %s, %s of it starting the stack\n\n",
		r.Config.Agents, strings.Join(r.Config.Agent, " "), r.TextBytes, r.Elapsed.Round(100*time.Millisecond), r.Startup.Round(100*time.Millisecond))

	rows := [][]string{{"NAME", "COUNT", "CONCURRENCY", "OPS/S", "P50", "P99", "P99 RATIO", "MISSING"}}
	for _, res := range r.Results {
		ratio, missing := "-", "-"
		if res.Baseline != "" {
			ratio = fmt.Sprintf("%.2fx %s", res.P99Ratio, res.Baseline)
		}
		if res.Name == nameFanOut {
			missing = strconv.Itoa(res.Missing)
		}
		rows = append(rows, []string{
			res.Name,
			strconv.Itoa(res.Count),
			strconv.Itoa(res.Concurrency),
			fmt.Sprintf("%.0f", res.PerSecond),
			millis(res.P50),
			millis(res.P99),
			ratio,
			missing,
		})
	}
	// The ratio column holds words ("2.12x raw/append") and reads best
	// aligned left.
	benchkit.WriteTable(&b, rows, 6)

	targets := [][]string{{"NAME", "FIGURE", "BASELINE", "RATIO", "TARGET", "RESULT"}}
	for _, res := range r.Results {
		base, _ := r.Result(res.Baseline)
		if res.RateTarget > 0 {
			targets = append(targets, []string{res.Name + " ops/s",
				fmt.Sprintf("%.0f", res.PerSecond), fmt.Sprintf("%.0f", base.PerSecond),
				fmt.Sprintf("%.2f", res.RateRatio), fmt.Sprintf(">= %.2f", res.RateTarget), res.RateVerdict()})
		}
		if res.P99Target > 0 {
			targets = append(targets, []string{res.Name + " p99",
				millis(res.P99), millis(base.P99),
				fmt.Sprintf("%.2f", res.P99Ratio), fmt.Sprintf("<= %.2f", res.P99Target), res.P99Verdict()})
		}
	}
	if len(targets) > 1 {
		fmt.Fprintf(&b, "\ntargets, each against %s measured in the same run:\n", nameRawAppend)
		// The verdict, a word, reads best aligned left.
		benchkit.WriteTable(&b, targets, len(targets[0])-1)
	}

	b.WriteString("\nwhat was timed:\n")
	names, notes := make([]string, len(r.Results)), make([]string, len(r.Results))
	for i, res := range r.Results {
		names[i], notes[i] = res.Name, res.Method
	}
	benchkit.WriteNotes(&b, names, notes)
	_, err := io.WriteString(w, b.String())
	return err
}

// millis formats a latency in milliseconds.
func millis(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// jsonReport is the JSON form of a Report. Durations are seconds.
type jsonReport struct {
	benchkit.Host
	Started              time.Time    `json:"started"`
	StartupSeconds       float64      `json:"startupSeconds"`
	ElapsedSeconds       float64      `json:"elapsedSeconds"`
	TextBytes            int          `json:"textBytes"`
	EventIntervalSeconds float64      `json:"eventIntervalSeconds"`
	Config               jsonConfig   `json:"config"`
	Results              []jsonResult `json:"results"`
}

type jsonConfig struct {
	Clients     int      `json:"clients"`
	Requests    int      `json:"requests"`
	Subscribers int      `json:"subscribers"`
	Events      int      `json:"events"`
	Agents      int      `json:"agents"`
	Agent       []string `json:"agent"`
}

type jsonResult struct {
	Name           string  `json:"name"`
	Count          int     `json:"count"`
	Concurrency    int     `json:"concurrency"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	PerSecond      float64 `json:"perSecond"`
	P50Seconds     float64 `json:"p50Seconds"`
	P99Seconds     float64 `json:"p99Seconds"`
	Baseline       string  `json:"baseline,omitempty"`
	P99Ratio       float64 `json:"p99Ratio,omitempty"`
	RateRatio      float64 `json:"rateRatio,omitempty"`
	RateTarget     float64 `json:"rateTarget,omitempty"`
	RateVerdict    string  `json:"rateVerdict,omitempty"`
	P99Target      float64 `json:"p99Target,omitempty"`
	P99Verdict     string  `json:"p99Verdict,omitempty"`
	// Missing is a pointer so that a fan-out with none says 0 and the
	// other results leave it out.
	Missing *int   `json:"missing,omitempty"`
	Method  string `json:"method"`
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Host:                 r.Host,
		Started:              r.Started,
		StartupSeconds:       r.Startup.Seconds(),
		ElapsedSeconds:       r.Elapsed.Seconds(),
		TextBytes:            r.TextBytes,
		EventIntervalSeconds: r.EventInterval.Seconds(),
		Config: jsonConfig{
			Clients:     r.Config.Clients,
			Requests:    r.Config.Requests,
			Subscribers: r.Config.Subscribers,
			Events:      r.Config.Events,
			Agents:      r.Config.Agents,
			Agent:       r.Config.Agent,
		},
		Results: make([]jsonResult, len(r.Results)),
	}
	for i, res := range r.Results {
		jr := jsonResult{
			Name:           res.Name,
			Count:          res.Count,
			Concurrency:    res.Concurrency,
			ElapsedSeconds: res.Elapsed.Seconds(),
			PerSecond:      res.PerSecond,
			P50Seconds:     res.P50.Seconds(),
			P99Seconds:     res.P99.Seconds(),
			Baseline:       res.Baseline,
			P99Ratio:       res.P99Ratio,
			RateRatio:      res.RateRatio,
			RateTarget:     res.RateTarget,
			RateVerdict:    res.RateVerdict(),
			P99Target:      res.P99Target,
			P99Verdict:     res.P99Verdict(),
			Method:         res.Method,
		}
		if res.Name == nameFanOut {
			jr.Missing = &res.Missing
		}
		out.Results[i] = jr
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
