package benchkit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestStatistics(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	if got := Median(ds); got != 3 {
		t.Errorf("Median = %d, want 3", got)
	}
	if got := Median(ds[:4]); got != 3 { // 1 2 4 5 -> (2+4)/2
		t.Errorf("Median of four = %d, want 3", got)
	}
	if ds[0] != 5 {
		t.Errorf("Median sorted its argument: %v", ds)
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100 - i)
	}
	for p, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0: 1} {
		if got := Percentile(hundred, p); got != want {
			t.Errorf("Percentile(%v) = %d, want %d", p, got, want)
		}
	}
	if Median(nil) != 0 || Percentile(nil, 0.5) != 0 || Rate(5, 0) != 0 {
		t.Error("empty input does not give 0")
	}
	if got := Rate(500, 2*time.Second); got != 250 {
		t.Errorf("Rate = %v, want 250", got)
	}
}

func TestProblemsAndDefaults(t *testing.T) {
	p := NewProblems("xbench")
	p.NotNegative("Records", 5, 10)
	if p.Err() != nil {
		t.Fatalf("a positive count is a problem: %v", p.Err())
	}
	p.NotNegative("Records", -1, 10)
	p.Addf("no Dir")
	err := p.Err()
	for _, want := range []string{"xbench: Records -1 is negative (want 1 or more, or 0 for 10)", "xbench: no Dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want it to say %q", err, want)
		}
	}
	type config struct {
		Records, Journals int
		Timeout           time.Duration
		Command           []string
		hidden            int
	}
	def := config{Records: 3, Journals: 4, Timeout: time.Second, Command: []string{"cat"}, hidden: 9}
	got := Defaults(config{Journals: 7, Command: []string{}}, def)
	want := config{Records: 3, Journals: 7, Timeout: time.Second, Command: []string{"cat"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults gave %+v, want %+v", got, want)
	}
}

func TestWriteTable(t *testing.T) {
	var b strings.Builder
	WriteTable(&b, [][]string{{"NAME", "N", "WORD"}, {"a", "100", "PASS"}, {"longer", "2", "BELOW"}}, 2)
	want := "NAME      N  WORD\na       100  PASS\nlonger    2  BELOW\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	WriteNotes(&b, []string{"a", "longer"}, []string{"x", "y"})
	if want := "  a       x\n  longer  y\n"; b.String() != want {
		t.Errorf("notes %q, want %q", b.String(), want)
	}
}

// A report embeds Host: its JSON keeps the host's fields at the top level,
// as the reports wrote them before they shared Host.
func TestHostFlattensIntoReports(t *testing.T) {
	type report struct {
		Host
		Rounds int `json:"rounds"`
	}
	data, err := json.Marshal(report{Host: Here(), Rounds: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"goVersion", "os", "arch", "cpus", "gomaxprocs", "natsServer", "rounds"} {
		if _, ok := got[key]; !ok {
			t.Errorf("report JSON %s lacks %q", data, key)
		}
	}
	if s := Here().String(); !strings.Contains(s, "nats-server ") || !strings.Contains(s, "CPUs (GOMAXPROCS ") {
		t.Errorf("host line %q", s)
	}
}
