package fleetbench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoot is where the kernel's control groups are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cfsPeriod is the scheduling period a CPU quota is a share of, in
// microseconds: the kernel's default.
const cfsPeriod = 100_000

// cpuLimit is a control group whose processes may use at most a share of
// one CPU's time between them: a daemon in it runs as on a small machine
// of its own.
type cpuLimit struct {
	dir   string
	procs string // the file a process is moved in by writing its pid
}

// newCPULimit makes a control group named name, beside this process's own,
// limited to cpus CPUs. It works with both cgroup versions: cpu.max under
// the unified hierarchy, cpu.cfs_quota_us under the v1 cpu controller.
func newCPULimit(name string, cpus float64) (*cpuLimit, error) {
	parent, v2, err := ownCPUGroup()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make a cpu control group: %w", err)
	}
	l := &cpuLimit{dir: dir, procs: filepath.Join(dir, "cgroup.procs")}
	quota := max(1000, int(cpus*cfsPeriod))
	if v2 {
		err = writeFile(filepath.Join(dir, "cpu.max"), fmt.Sprintf("%d %d", quota, cfsPeriod))
	} else {
		err = errors.Join(writeFile(filepath.Join(dir, "cpu.cfs_period_us"), strconv.Itoa(cfsPeriod)),
			writeFile(filepath.Join(dir, "cpu.cfs_quota_us"), strconv.Itoa(quota)))
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("limit a cpu control group: %w", err), l.remove())
	}
	return l, nil
}

// add moves process pid into the group.
func (l *cpuLimit) add(pid int) error {
	if err := writeFile(l.procs, strconv.Itoa(pid)); err != nil {
		return fmt.Errorf("move process %d into %s: %w", pid, l.dir, err)
	}
	return nil
}

// remove removes the group, which must have no process left.
func (l *cpuLimit) remove() error {
	if err := os.Remove(l.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cpu control group: %w", err)
	}
	return nil
}

// ownCPUGroup is the directory of the control group this process is in for
// the cpu controller, and whether it is the unified (v2) hierarchy. Under
// v2 the cpu controller must be enabled for its children; it is turned on
// when it is not.
func ownCPUGroup() (dir string, v2 bool, err error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", false, fmt.Errorf("find this process's control group: %w", err)
	}
	defer f.Close()
	var unified string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-id:controller-list:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			unified = parts[2]
			continue
		}
		for c := range strings.SplitSeq(parts[1], ",") {
			if c == "cpu" {
				return filepath.Join(cgroupRoot, parts[1], parts[2]), false, nil
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	if unified == "" {
		return "", false, errors.New("no cpu control group: /proc/self/cgroup names neither a v1 cpu controller nor a unified hierarchy")
	}
	dir = filepath.Join(cgroupRoot, unified)
	if err := writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+cpu"); err != nil {
		return "", false, fmt.Errorf("enable the cpu controller under %s: %w", dir, err)
	}
	return dir, true, nil
}

func writeFile(path, s string) error {
	return os.WriteFile(path, []byte(s), 0o644)
}
