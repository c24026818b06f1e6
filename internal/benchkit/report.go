package benchkit

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Report is the outcome of one suite's run, in the form every suite shares:
// what ran, on what machine, with which settings, and one Result per
// measurement. WriteText and WriteJSON print any number of them as one
// report.
type Report struct {
	// Suite is the name the bench command knows the suite by, e.g. "store".
	Suite string
	// Title says in a few words what the suite compares.
	Title string
	// Setup are lines of prose on how the run was set up, shown under the
	// title.
	Setup []string
	// Host is the machine the suite ran on.
	Host    Host
	Started time.Time
	// Elapsed is the whole run, set-up included.
	Elapsed time.Duration
	// Config is the configuration run, defaults filled in, and the fixed
	// facts of the run (rounds, record size), in the order shown.
	Config []Setting
	// Results are the measurements, in the order shown.
	Results []Result
	// Notes are lines shown after the results: what a figure means, what
	// the figures do not say.
	Notes []string
}

// Setting is one value of a run's configuration. Value is a number, a
// string or a list of strings; a duration is given in seconds, with a name
// that says so.
type Setting struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Result is one measurement. Every field but Name is optional: a
// throughput measurement has Rate, a latency one P50 and P99.
type Result struct {
	// Name says what was measured, e.g. "append/single-writer/sync-always".
	Name string
	// Count is the number of operations (records, requests, decisions)
	// one round handled.
	Count int
	// Elapsed is the time of one round, or the median round's.
	Elapsed time.Duration
	// Rate is operations per second, counted in RateUnit, e.g.
	// "records/s".
	Rate     float64
	RateUnit string
	// P50 and P99 are latency percentiles over every operation.
	P50, P99 time.Duration
	// Baseline names what Ratio compares with: another result's name, or
	// a word for a figure measured beside this one ("raw").
	Baseline string
	// Ratio is Rate over the baseline's rate.
	Ratio float64
	// Checks are the result's targets and how it did against them.
	Checks []Check
	// Figures are the suite's own figures of the result, in the order
	// shown.
	Figures []Figure
	// Method says in words what was timed.
	Method string
}

// Figure is one figure of a result beyond those every result has.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	// Unit is "s" for a duration in seconds, "x" for a ratio, or a word
	// shown after the value ("MiB"); "" for a plain count or rate.
	Unit string `json:"unit,omitempty"`
}

// Seconds is a figure of a duration.
func Seconds(name string, d time.Duration) Figure {
	return Figure{Name: name, Value: d.Seconds(), Unit: "s"}
}

// Check is one target of a result.
type Check struct {
	// Metric names the figure judged, e.g. "ratio to raw" or "p99".
	Metric string
	// Value and Target are in Unit (see Figure.Unit).
	Value, Target float64
	Unit          string
	// Max is true when Target is an upper bound (a latency, memory),
	// false when it is a lower bound (a throughput).
	Max bool
}

// Verdict words: a target is met, or the figure falls short of it.
const (
	Pass  = "PASS"
	Below = "BELOW"
)

// Pass reports whether the value meets the target; a value equal to the
// target meets it.
func (c Check) Pass() bool {
	if c.Max {
		return c.Value <= c.Target
	}
	return c.Value >= c.Target
}

// Verdict is Pass or Below.
func (c Check) Verdict() string {
	if c.Pass() {
		return Pass
	}
	return Below
}

// Bound is the target as the reports show it: ">= 0.70x", "<= 25 ms".
func (c Check) Bound() string {
	if c.Max {
		return "<= " + FormatValue(c.Target, c.Unit)
	}
	return ">= " + FormatValue(c.Target, c.Unit)
}

// Verdict is Below when a check misses its target, Pass when every check
// meets it, and "" for a result without targets.
func (r Result) Verdict() string {
	if len(r.Checks) == 0 {
		return ""
	}
	for _, c := range r.Checks {
		if !c.Pass() {
			return Below
		}
	}
	return Pass
}

// Figure returns the value of the figure of the given name.
func (r Result) Figure(name string) (float64, bool) {
	i := slices.IndexFunc(r.Figures, func(f Figure) bool { return f.Name == name })
	if i < 0 {
		return 0, false
	}
	return r.Figures[i].Value, true
}

// Check returns the check of the given metric.
func (r Result) Check(metric string) (Check, bool) {
	i := slices.IndexFunc(r.Checks, func(c Check) bool { return c.Metric == metric })
	if i < 0 {
		return Check{}, false
	}
	return r.Checks[i], true
}

// Result returns the result of the given name.
func (r Report) Result(name string) (Result, bool) {
	i := slices.IndexFunc(r.Results, func(res Result) bool { return res.Name == name })
	if i < 0 {
		return Result{}, false
	}
	return r.Results[i], true
}

// Below returns the results that miss a target.
func (r Report) Below() []Result {
	var out []Result
	for _, res := range r.Results {
		if res.Verdict() == Below {
			out = append(out, res)
		}
	}
	return out
}

// FormatDuration rounds a duration to three significant figures or so:
// 1.234s, 12.35ms, 4.56µs.
func FormatDuration(d time.Duration) string {
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

// FormatValue formats v in unit (see Figure.Unit): a duration for "s", two
// decimals and an "x" for a ratio, and otherwise a whole number from 100
// up and at most two decimals below, followed by the unit.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "s":
		return FormatDuration(time.Duration(v * float64(time.Second)))
	case "x":
		return strconv.FormatFloat(v, 'f', 2, 64) + "x"
	}
	num := strconv.FormatFloat(v, 'f', 0, 64)
	if v < 100 {
		num = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".")
	}
	if unit == "" {
		return num
	}
	return num + " " + unit
}

// formatSetting formats a setting's value: strings quoted, the rest as Go
// prints them.
func formatSetting(v any) string {
	switch v.(type) {
	case string, []string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprint(v)
}

// SettingsOf lists the settings of a suite's configuration, a struct, in
// the order of its fields: each exported field of a number, a bool, a list
// of strings or a duration (named with "Seconds" and given in seconds),
// named as in JSON (Records is "records"). Fields of other types (a
// Progress writer, a logger) are left out, and so is a field tagged
// `bench:"-"` (a scratch directory).
func SettingsOf(cfg any) []Setting {
	v := reflect.ValueOf(cfg)
	var out []Setting
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Tag.Get("bench") == "-" {
			continue
		}
		name := strings.ToLower(f.Name[:1]) + f.Name[1:]
		switch x := v.Field(i).Interface().(type) {
		case time.Duration:
			out = append(out, Setting{Name: name + "Seconds", Value: x.Seconds()})
		case int, int64, float64, bool, string, []string:
			out = append(out, Setting{Name: name, Value: x})
		}
	}
	return out
}
