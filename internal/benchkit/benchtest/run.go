package benchtest

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// RunFunc is a benchmark's entry point: every benchmark package's Run has
// this shape.
type RunFunc[C any] func(context.Context, C) (benchkit.Report, error)

// RunDefaults runs a benchmark at its default sizes and writes the report
// to t's output, when the environment variable env is "1": a full run
// takes minutes, so it is asked for, not part of every test run. config
// returns the Config to run, given the scratch directory and where
// progress lines go.
func RunDefaults[C any](t *testing.T, env string, run RunFunc[C], config func(dir string, progress io.Writer) C) {
	t.Helper()
	if os.Getenv(env) != "1" {
		t.Skip("set " + env + "=1 to run the full benchmark")
	}
	rep, err := run(t.Context(), config(t.TempDir(), t.Output()))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := benchkit.WriteText(t.Output(), rep); err != nil {
		t.Fatal(err)
	}
}

// RunSmall runs a benchmark at a test's sizes: config returns the Config,
// given a scratch directory (Scratch, whose checks wait within for the
// goroutines) and where progress lines go. It fails t when Run fails and
// returns the report and the progress lines.
func RunSmall[C any](t *testing.T, within time.Duration, run RunFunc[C], config func(dir string, progress io.Writer) C) (benchkit.Report, string) {
	t.Helper()
	dir := Scratch(t, within)
	var progress bytes.Buffer
	rep, err := run(t.Context(), config(dir, &progress))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep, progress.String()
}

// ProgressLines fails t unless progress has want lines: one a result.
func ProgressLines(t testing.TB, progress string, want int) {
	t.Helper()
	if got := strings.Count(progress, "\n"); got != want {
		t.Errorf("progress has %d lines, want %d:\n%s", got, want, progress)
	}
}

// ConfigCase is a benchmark's Config and what Validate says of it.
type ConfigCase[C any] struct {
	Name   string
	Config C
	// Want holds substrings of Validate's error; nil for a Config it
	// accepts.
	Want []string
}

// Validates checks Validate against each case (Mentions), and that run
// refuses each invalid Config with that same error, before it starts
// anything.
func Validates[C interface{ Validate() error }](t *testing.T, run RunFunc[C], cases []ConfigCase[C]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			err := tc.Config.Validate()
			Mentions(t, err, tc.Want)
			if tc.Want == nil {
				return
			}
			if _, rerr := run(t.Context(), tc.Config); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("Run with an invalid Config = %v, want the Validate error", rerr)
			}
		})
	}
}
