package benchkit

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// Host is the machine and software a report was measured on.
type Host struct {
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// CPUs is the number of logical CPUs; GOMAXPROCS how many Go used.
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NATSServer string `json:"natsServer"`
}

// Here describes this process's machine.
func Here() Host {
	return Host{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), NATSServer: natsserver.VERSION}
}

// String is the host as a report's first line shows it.
func (h Host) String() string {
	return fmt.Sprintf("%s %s/%s, %d CPUs (GOMAXPROCS %d), nats-server %s", h.GoVersion, h.OS, h.Arch, h.CPUs, h.GOMAXPROCS, h.NATSServer)
}

// Problems collects every problem of a configuration, so that Validate
// reports them all at once.
type Problems struct {
	prefix string
	errs   []error
}

// NewProblems returns an empty list whose errors start with prefix, the
// package name.
func NewProblems(prefix string) *Problems { return &Problems{prefix: prefix} }

// Addf adds a problem.
func (p *Problems) Addf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(p.prefix+": "+format, args...))
}

// NotNegative adds a problem when the count v of the field name is
// negative; 0 stands for its default def.
func (p *Problems) NotNegative(name string, v, def int) {
	if v < 0 {
		p.Addf("%s %d is negative (want 1 or more, or 0 for %d)", name, v, def)
	}
}

// Err returns the problems as one error, nil when there are none.
func (p *Problems) Err() error { return errors.Join(p.errs...) }

// Defaults returns c, a suite's Config, with each exported field that is
// zero (a slice: empty) set to that field of def, the suite's
// DefaultConfig: every suite says that a zero field means its default,
// and DefaultConfig spells the defaults out once. A field whose default
// is itself zero keeps its own meaning of zero.
func Defaults[C any](c, def C) C {
	v, d := reflect.ValueOf(&c).Elem(), reflect.ValueOf(def)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.CanSet() && (f.IsZero() || f.Kind() == reflect.Slice && f.Len() == 0) {
			f.Set(d.Field(i))
		}
	}
	return c
}

// Rate is n per second over d, 0 for a non-positive d.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Median of ds, 0 when empty; ds is left as it was.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Percentile is the nearest-rank percentile p (0.5, 0.99) of ds, 0 when
// empty; ds is left as it was.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Timed runs fn and returns how long it took.
func Timed(fn func() error) (time.Duration, error) {
	start := time.Now()
	err := fn()
	return time.Since(start), err
}

// CloseInto closes c and, when *err is nil, reports a close error there.
func CloseInto(c interface{ Close() error }, err *error) {
	if cerr := c.Close(); *err == nil {
		*err = cerr
	}
}

// Filler is n bytes of plausible agent text.
func Filler(n int) string {
	const words = "step done, next file checked; "
	return strings.Repeat(words, n/len(words)+1)[:n]
}

// WriteTable writes rows as aligned columns: the first column and those
// listed in left are aligned left, the others (numbers) right.
func WriteTable(b *strings.Builder, rows [][]string, left ...int) {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, row := range rows {
		var line strings.Builder
		for i, cell := range row {
			switch {
			case i == 0:
				fmt.Fprintf(&line, "%-*s", widths[i], cell)
			case slices.Contains(left, i):
				fmt.Fprintf(&line, "  %-*s", widths[i], cell)
			default:
				fmt.Fprintf(&line, "  %*s", widths[i], cell)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// WriteNotes writes one indented line per name, the names padded to one
// width: what each result of a report timed.
func WriteNotes(b *strings.Builder, names, notes []string) {
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for i, n := range names {
		fmt.Fprintf(b, "  %-*s  %s\n", width, n, notes[i])
	}
}
