package fleet

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Host is a member's heartbeat, the value of its key in the hosts bucket.
// Its JSON form is shared by every daemon of a fleet.
type Host struct {
	// Name is the host's name in the fleet (ValidName).
	Name string `json:"name"`
	// Instance is random per process: two live processes under one name
	// are told apart by it, and the second is refused.
	Instance string `json:"instance"`
	// Home says where the host runs: its machine and data directory
	// (DefaultName of it). A process that finds its name held by a live
	// heartbeat of the same home is that host's next process, after the
	// last one died: it takes the name over.
	Home   string            `json:"home,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Profiles are the names of its environment profiles.
	Profiles []string `json:"profiles,omitempty"`
	// Started is when this process joined; Beat when it sent this
	// heartbeat, both by its own clock.
	Started time.Time `json:"started"`
	Beat    time.Time `json:"beat"`
	// LeaseMs is how long the others wait after a heartbeat before they
	// take the host for lost.
	LeaseMs  int64    `json:"leaseMs"`
	Capacity Capacity `json:"capacity"`
	// Running are the executions with a live process on the host.
	Running []string `json:"running,omitempty"`
	// Left is set by the last heartbeat of a host that closed cleanly.
	Left bool `json:"left,omitempty"`
}

// Lease is h's lease as a duration.
func (h Host) Lease() time.Duration { return time.Duration(h.LeaseMs) * time.Millisecond }

// Capacity is how much work a host takes and holds.
type Capacity struct {
	// MaxRunning is how many agents it runs at once before launches wait.
	MaxRunning int `json:"maxRunning"`
	// Running is how many run now; Queued how many of the launches it
	// took wait in the fleet's queue.
	Running int `json:"running"`
	Queued  int `json:"queued"`
	// MemoryFree and MemoryTotal are the machine's available and total
	// memory in bytes; 0 where the system does not say.
	MemoryFree  uint64 `json:"memoryFree,omitempty"`
	MemoryTotal uint64 `json:"memoryTotal,omitempty"`
	// MinFreeMemory is the free memory below which the host starts no
	// work (serve --min-free-memory); 0 for no such floor.
	MinFreeMemory uint64 `json:"minFreeMemory,omitempty"`
}

// Room says why the host takes no new work now, or nil: its free memory
// is below its floor. A host whose system does not say how much memory is
// free is taken to have room.
func (c Capacity) Room() error {
	if c.MinFreeMemory == 0 || c.MemoryFree == 0 || c.MemoryFree >= c.MinFreeMemory {
		return nil
	}
	return fmt.Errorf("%s of memory free, below its floor of %s (serve --min-free-memory)", Bytes(c.MemoryFree), Bytes(c.MinFreeMemory))
}

// Slots is how many more agents the host runs before launches wait there.
func (c Capacity) Slots() int { return c.MaxRunning - c.Running }

// Bytes words a byte count for people, in binary units.
func Bytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

// Matches says why h cannot run a launch placed with host and labels, and
// needing the environment profile profile (none when empty), or nil when
// it can.
func (h Host) Matches(host string, labels map[string]string, profile string) error {
	if profile != "" && !slices.Contains(h.Profiles, profile) {
		return fmt.Errorf("it has no environment profile %s", profile)
	}
	if host != "" && h.Name != host {
		return fmt.Errorf("it is not host %s", host)
	}
	for k, v := range labels {
		if got, ok := h.Labels[k]; !ok || got != v {
			return fmt.Errorf("it has no label %s=%s", k, v)
		}
	}
	return nil
}

// MaxNameLength bounds a host name.
const MaxNameLength = 64

var (
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)
	labelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// ValidName reports why name cannot name a host, or nil. A name is a key
// of the hosts bucket and part of a NATS subject, hence the narrow set.
func ValidName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLength || !namePattern.MatchString(name) {
		return fmt.Errorf("host name %q: want 1 to %d of [A-Za-z0-9_-], starting with a letter or digit", name, MaxNameLength)
	}
	return nil
}

// ParseLabel parses a label given as key=value.
func ParseLabel(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	if !ok || !labelPattern.MatchString(key) || len(key) > 63 || len(value) > 255 || strings.ContainsAny(value, "\n\r\x00") {
		return "", "", fmt.Errorf("label %q: want key=value, the key 1 to 63 of [A-Za-z0-9_.-] (e.g. gpu=1, os=linux), the value one line of at most 255 bytes", s)
	}
	return key, value, nil
}

// DefaultName is the host name of a daemon on dataDir when none is given:
// the machine's name and a short hash of the data directory's absolute
// path, so that two daemons on one machine differ and one daemon keeps its
// name across restarts.
func DefaultName(dataDir string) string {
	machine, _ := os.Hostname()
	word := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, machine)
	word = strings.Trim(word, "-_")
	if len(word) > 40 {
		word = word[:40]
	}
	if word == "" {
		word = "host"
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return word + "-" + hex.EncodeToString(sum[:3])
}

// memory reads the machine's available and total memory; zeros where the
// system has no /proc/meminfo.
func memory() (free, total uint64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemAvailable:":
			free = kb * 1024
		case "MemTotal:":
			total = kb * 1024
		}
	}
	return free, total
}
