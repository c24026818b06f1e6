package benchkit

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
)

// The JSON form of reports: one document, the host once, a list of suites.
// Durations are seconds; a figure that a result does not have is left out.
type (
	jsonDocument struct {
		Host   Host        `json:"host"`
		Suites []jsonSuite `json:"suites"`
	}
	jsonSuite struct {
		Suite          string       `json:"suite"`
		Title          string       `json:"title"`
		Setup          []string     `json:"setup,omitempty"`
		Started        time.Time    `json:"started"`
		ElapsedSeconds float64      `json:"elapsedSeconds"`
		Config         []Setting    `json:"config"`
		Results        []jsonResult `json:"results"`
		Notes          []string     `json:"notes,omitempty"`
	}
	jsonResult struct {
		Name           string      `json:"name"`
		Count          int         `json:"count,omitempty"`
		ElapsedSeconds float64     `json:"elapsedSeconds,omitempty"`
		Rate           float64     `json:"rate,omitempty"`
		RateUnit       string      `json:"rateUnit,omitempty"`
		P50Seconds     float64     `json:"p50Seconds,omitempty"`
		P99Seconds     float64     `json:"p99Seconds,omitempty"`
		Baseline       string      `json:"baseline,omitempty"`
		Ratio          float64     `json:"ratio,omitempty"`
		Checks         []jsonCheck `json:"checks,omitempty"`
		Figures        []Figure    `json:"figures,omitempty"`
		Method         string      `json:"method,omitempty"`
	}
	jsonCheck struct {
		Metric string  `json:"metric"`
		Value  float64 `json:"value"`
		Target float64 `json:"target"`
		Unit   string  `json:"unit,omitempty"`
		Max    bool    `json:"max,omitempty"`
		// Verdict is written for readers; ReadJSON judges the check
		// again.
		Verdict string `json:"verdict"`
	}
)

// WriteJSON writes reports as one indented JSON document: the host of the
// first, and every report as a suite.
func WriteJSON(w io.Writer, reps ...Report) error {
	doc := jsonDocument{Suites: make([]jsonSuite, len(reps))}
	if len(reps) > 0 {
		doc.Host = reps[0].Host
	}
	for i, r := range reps {
		s := jsonSuite{Suite: r.Suite, Title: r.Title, Setup: r.Setup, Started: r.Started,
			ElapsedSeconds: r.Elapsed.Seconds(), Config: r.Config, Notes: r.Notes,
			Results: make([]jsonResult, len(r.Results))}
		for k, res := range r.Results {
			jr := jsonResult{Name: res.Name, Count: res.Count, ElapsedSeconds: res.Elapsed.Seconds(),
				Rate: res.Rate, RateUnit: res.RateUnit, P50Seconds: res.P50.Seconds(), P99Seconds: res.P99.Seconds(),
				Baseline: res.Baseline, Ratio: res.Ratio, Figures: res.Figures, Method: res.Method}
			for _, c := range res.Checks {
				jr.Checks = append(jr.Checks, jsonCheck{Metric: c.Metric, Value: c.Value, Target: c.Target,
					Unit: c.Unit, Max: c.Max, Verdict: c.Verdict()})
			}
			s.Results[k] = jr
		}
		doc.Suites[i] = s
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// ReadJSON reads a document WriteJSON wrote. Every report gets the
// document's host; setting values come back as JSON decodes them
// (float64, string, []any).
func ReadJSON(r io.Reader) ([]Report, error) {
	var doc jsonDocument
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	reps := make([]Report, len(doc.Suites))
	for i, s := range doc.Suites {
		rep := Report{Suite: s.Suite, Title: s.Title, Setup: s.Setup, Host: doc.Host, Started: s.Started,
			Elapsed: seconds(s.ElapsedSeconds), Config: s.Config, Notes: s.Notes,
			Results: make([]Result, len(s.Results))}
		for k, jr := range s.Results {
			res := Result{Name: jr.Name, Count: jr.Count, Elapsed: seconds(jr.ElapsedSeconds),
				Rate: jr.Rate, RateUnit: jr.RateUnit, P50: seconds(jr.P50Seconds), P99: seconds(jr.P99Seconds),
				Baseline: jr.Baseline, Ratio: jr.Ratio, Figures: jr.Figures, Method: jr.Method}
			for _, c := range jr.Checks {
				res.Checks = append(res.Checks, Check{Metric: c.Metric, Value: c.Value, Target: c.Target, Unit: c.Unit, Max: c.Max})
			}
			rep.Results[k] = res
		}
		reps[i] = rep
	}
	return reps, nil
}

// seconds is the duration of s seconds, to the nanosecond.
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
