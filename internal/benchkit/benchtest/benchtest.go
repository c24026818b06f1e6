package benchtest

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Scratch returns a scratch directory for a run and checks, when t ends,
// that the run left it empty and stopped every goroutine it started
// (WaitGoroutines, within). Call it before the run starts anything.
func Scratch(t testing.TB, within time.Duration) string {
	t.Helper()
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	// Cleanups run last first: this one before the directory is removed.
	t.Cleanup(func() {
		EmptyDir(t, dir, "after Run")
		WaitGoroutines(t, before, within)
	})
	return dir
}

// Reports writes rep as text and as JSON, as agentjournal-bench prints
// them, and checks that the text names every result and that the JSON
// reads back with every result and each check's verdict. It returns the
// text, for a suite's own words, and the report read back.
func Reports(t testing.TB, rep benchkit.Report) (string, benchkit.Report) {
	t.Helper()
	var text, js bytes.Buffer
	if err := benchkit.WriteText(&text, rep); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	for _, res := range rep.Results {
		if !strings.Contains(text.String(), res.Name) {
			t.Errorf("text report does not name %s:\n%s", res.Name, text.String())
		}
	}
	if err := benchkit.WriteJSON(&js, rep); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	decoded, err := benchkit.ReadJSON(bytes.NewReader(js.Bytes()))
	if err != nil {
		t.Fatalf("JSON report does not decode: %v\n%s", err, js.String())
	}
	if len(decoded) != 1 || len(decoded[0].Results) != len(rep.Results) {
		t.Fatalf("JSON report has %d suites, want 1 with %d results:\n%s", len(decoded), len(rep.Results), js.String())
	}
	// ReadJSON judges each check again; the verdict written is for readers.
	var verdicts struct {
		Suites []struct {
			Results []struct {
				Name   string `json:"name"`
				Checks []struct {
					Verdict string `json:"verdict"`
				} `json:"checks"`
			} `json:"results"`
		} `json:"suites"`
	}
	if err := json.Unmarshal(js.Bytes(), &verdicts); err != nil {
		t.Fatalf("JSON report does not decode: %v\n%s", err, js.String())
	}
	for i, res := range verdicts.Suites[0].Results {
		if got, want := len(res.Checks), len(rep.Results[i].Checks); got != want {
			t.Errorf("JSON %s: %d checks, want %d", res.Name, got, want)
			continue
		}
		for k, c := range res.Checks {
			if want := rep.Results[i].Checks[k].Verdict(); c.Verdict != want {
				t.Errorf("JSON %s check %d: verdict %q, want %q", res.Name, k, c.Verdict, want)
			}
		}
	}
	return text.String(), decoded[0]
}

// WaitGoroutines waits up to within for the goroutines to fall back to
// before, and fails t with every goroutine's stack when they do not: a run
// that returned must have stopped everything it started.
func WaitGoroutines(t testing.TB, before int, within time.Duration) {
	t.Helper()
	WaitGoroutinesExcept(t, before, within)
}

// WaitGoroutinesExcept is WaitGoroutines not counting the goroutines whose
// stack holds one of the functions named in except: goroutines a library
// leaves behind on a path it does not clean up, that nothing of ours can
// stop. Each caller says which path that is.
func WaitGoroutinesExcept(t testing.TB, before int, within time.Duration, except ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := runtime.NumGoroutine()
		if len(except) > 0 {
			_, left = goroutines(except)
		}
		if left <= before {
			return
		}
		if time.Now().After(deadline) {
			stacks, left := goroutines(except)
			t.Errorf("%d goroutines left running after Run, want at most %d:\n%s", left, before, stacks)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// goroutines returns every goroutine's stack and how many there are, not
// counting those whose stack names a function in except.
func goroutines(except []string) (string, int) {
	var kept []string
	for _, g := range Stacks() {
		if !slices.ContainsFunc(except, func(fn string) bool { return strings.Contains(g, fn+"(") }) {
			kept = append(kept, g)
		}
	}
	return strings.Join(kept, "\n\n"), len(kept)
}

// Stacks returns the stack of every goroutine of the process, one string
// each, as runtime.Stack writes them.
func Stacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// EmptyDir fails t unless dir is empty: a run removes what it made in its
// scratch directory, whether it succeeded or not. after says which run.
func EmptyDir(t testing.TB, dir, after string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("scratch directory holds %d entries %s, want 0", len(entries), after)
	}
}

// Mentions checks a validation error: nil when want is nil, else an error
// that contains every string of want.
func Mentions(t testing.TB, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("Validate() = %v, want nil", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate() = nil, want an error mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate() = %q, want it to mention %q", err, w)
		}
	}
}
