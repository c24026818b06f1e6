package projbench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// value formats the check's value in its unit.
func (c Check) value() string { return formatValue(c.Value, c.Unit) }

// target formats the bound, with "<" or ">=".
func (c Check) target() string {
	if c.Below {
		return "< " + formatValue(c.Target, c.Unit)
	}
	return ">= " + formatValue(c.Target, c.Unit)
}

func formatValue(v float64, unit string) string {
	var num string
	switch {
	case v >= 100:
		num = strconv.FormatFloat(v, 'f', 0, 64)
	default:
		num = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	}
	if unit == "" {
		return num
	}
	return num + " " + unit
}

// WriteText writes the report as an aligned table, one row per result,
// then every target with its verdict and what each result timed.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "projections read side: %s\n", r.Host)
	fmt.Fprintf(&b, "catch-up log: %d records in %d journals, %d MiB encoded; throughputs are the median of %d rounds; the run took %s\n\n",
		r.Config.Records, r.Config.Journals, r.LogBytes>>20, r.Rounds, r.Elapsed.Round(100*time.Millisecond))

	rows := [][]string{{"NAME", "RECORDS", "REC/S", "P50", "P99"}}
	for _, res := range r.Results {
		perSec, p50, p99 := "-", "-", "-"
		if res.PerSecond > 0 {
			perSec = fmt.Sprintf("%.0f", res.PerSecond)
		}
		if res.P99 > 0 {
			p50, p99 = duration(res.P50), duration(res.P99)
		}
		rows = append(rows, []string{res.Name, strconv.Itoa(res.Records), perSec, p50, p99})
	}
	benchkit.WriteTable(&b, rows)

	b.WriteString("\ntargets:\n")
	rows = nil
	for _, res := range r.Results {
		for _, c := range res.Checks {
			rows = append(rows, []string{"  " + res.Name, c.Metric, c.value(), c.target(), c.Verdict()})
		}
	}
	benchkit.WriteTable(&b, rows, allColumns(rows)...)

	b.WriteString("\nmethods:\n")
	names, notes := make([]string, len(r.Results)), make([]string, len(r.Results))
	for i, res := range r.Results {
		names[i], notes[i] = res.Name, res.Method
	}
	benchkit.WriteNotes(&b, names, notes)
	_, err := io.WriteString(w, b.String())
	return err
}

// duration rounds a latency to three significant figures or so.
func duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond).String()
	}
	return d.String()
}

// jsonReport is the JSON form of a Report. Durations are seconds.
type jsonReport struct {
	benchkit.Host
	Started        time.Time    `json:"started"`
	ElapsedSeconds float64      `json:"elapsedSeconds"`
	Rounds         int          `json:"rounds"`
	LogBytes       int64        `json:"logBytes"`
	Config         jsonConfig   `json:"config"`
	Results        []jsonResult `json:"results"`
}

type jsonConfig struct {
	Records        int `json:"records"`
	Journals       int `json:"journals"`
	Rate           int `json:"rate"`
	LatencyRecords int `json:"latencyRecords"`
}

type jsonResult struct {
	Name           string      `json:"name"`
	Records        int         `json:"records"`
	ElapsedSeconds float64     `json:"elapsedSeconds"`
	PerSecond      float64     `json:"perSecond,omitempty"`
	P50Seconds     float64     `json:"p50Seconds,omitempty"`
	P99Seconds     float64     `json:"p99Seconds,omitempty"`
	Checks         []jsonCheck `json:"checks,omitempty"`
	Method         string      `json:"method"`
}

type jsonCheck struct {
	Metric  string  `json:"metric"`
	Value   float64 `json:"value"`
	Target  float64 `json:"target"`
	Unit    string  `json:"unit,omitempty"`
	Below   bool    `json:"below,omitempty"`
	Verdict string  `json:"verdict"`
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Host:           r.Host,
		Started:        r.Started,
		ElapsedSeconds: r.Elapsed.Seconds(),
		Rounds:         r.Rounds,
		LogBytes:       r.LogBytes,
		Config: jsonConfig{
			Records:        r.Config.Records,
			Journals:       r.Config.Journals,
			Rate:           r.Config.Rate,
			LatencyRecords: r.Config.LatencyRecords,
		},
		Results: make([]jsonResult, len(r.Results)),
	}
	for i, res := range r.Results {
		jr := jsonResult{
			Name:           res.Name,
			Records:        res.Records,
			ElapsedSeconds: res.Elapsed.Seconds(),
			PerSecond:      res.PerSecond,
			P50Seconds:     res.P50.Seconds(),
			P99Seconds:     res.P99.Seconds(),
			Method:         res.Method,
		}
		for _, c := range res.Checks {
			jr.Checks = append(jr.Checks, jsonCheck{Metric: c.Metric, Value: c.Value, Target: c.Target, Unit: c.Unit, Below: c.Below, Verdict: c.Verdict()})
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

// allColumns lists every column of rows, to align a table of words left.
func allColumns(rows [][]string) []int {
	if len(rows) == 0 {
		return nil
	}
	cols := make([]int, len(rows[0]))
	for i := range cols {
		cols[i] = i
	}
	return cols
}
