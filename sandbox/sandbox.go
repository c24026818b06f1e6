package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Network is what network an agent in the sandbox has. The values are
// written into journal headers: never rename one.
type Network string

const (
	// NetworkHost shares the host's network: the agent reaches its model's
	// API, and also every port on loopback (the daemon's API and NATS
	// listener among them, which it holds no secret for).
	NetworkHost Network = "host"
	// NetworkNone gives the agent a network namespace of its own with
	// loopback only: nothing outside the sandbox is reachable.
	NetworkNone Network = "none"
)

// Networks lists the accepted Network values.
var Networks = []Network{NetworkHost, NetworkNone}

// ParseNetwork checks a network name; "" is NetworkHost.
func ParseNetwork(s string) (Network, error) {
	if s == "" {
		return NetworkHost, nil
	}
	if n := Network(s); slices.Contains(Networks, n) {
		return n, nil
	}
	return "", fmt.Errorf("sandbox: unknown network %q (want %s or %s)", s, NetworkHost, NetworkNone)
}

var (
	// ErrUnavailable means bwrap is missing or cannot make a sandbox on
	// this host; the error wrapping it says which and how to fix it.
	ErrUnavailable = errors.New("sandbox: bubblewrap cannot run agents here")
	// ErrBadPolicy means a policy names a path that is not absolute or a
	// network that does not exist.
	ErrBadPolicy = errors.New("sandbox: bad policy")
)

// Policy is what an agent in the sandbox may see and change.
type Policy struct {
	// Dir is the agent's working directory: writable, and where it starts.
	Dir string
	// Writable are other paths bound read-write (the agent CLI's state
	// directories). A path that does not exist is left out.
	Writable []string
	// Hidden are paths the agent must not read: a directory is covered by
	// an empty tmpfs, a file by an empty file. A path that does not exist
	// is left out.
	Hidden []string
	// Private are directories the agent gets as empty private tmpfs, as
	// /tmp always is (its TMPDIR).
	Private []string
	// Network is the agent's network; "" is NetworkHost.
	Network Network
}

// Validate reports every problem of the policy at once.
func (p Policy) Validate() error {
	var errs []error
	if !filepath.IsAbs(p.Dir) {
		errs = append(errs, fmt.Errorf("%w: the working directory %q is not an absolute path", ErrBadPolicy, p.Dir))
	}
	for _, list := range [][]string{p.Writable, p.Hidden, p.Private} {
		for _, path := range list {
			if !filepath.IsAbs(path) {
				errs = append(errs, fmt.Errorf("%w: %q is not an absolute path", ErrBadPolicy, path))
			}
		}
	}
	if _, err := ParseNetwork(string(p.Network)); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrBadPolicy, err))
	}
	return errors.Join(errs...)
}

// mount is one bwrap mount operation on path.
type mount struct {
	op   string // --bind, --tmpfs, --ro-bind-file (a hidden file)
	path string
}

// depth counts a path's components: mounts are made parents first.
func (m mount) depth() int { return strings.Count(filepath.Clean(m.path), "/") }

// Args returns bwrap's arguments (without bwrap itself) that run program
// with args under the policy.
func (p Policy) Args(program string, args []string) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var mounts []mount
	seen := map[mount]bool{}
	add := func(op, path string) {
		m := mount{op, filepath.Clean(path)}
		if !seen[m] {
			seen[m] = true
			mounts = append(mounts, m)
		}
	}
	add("--tmpfs", "/tmp")
	for _, path := range p.Private {
		add("--tmpfs", path)
	}
	for _, path := range slices.Concat([]string{p.Dir}, p.Writable) {
		// Bound at the path the agent knows and at its real one, so a
		// symlinked directory is writable whichever way it is reached.
		for _, q := range withReal(path) {
			add("--bind", q)
		}
	}
	var hiddenDirs []string
	for _, path := range p.Hidden {
		for _, q := range withReal(path) {
			if info, err := os.Stat(q); err == nil && info.IsDir() {
				hiddenDirs = append(hiddenDirs, q)
			}
		}
	}
	writable := slices.Concat([]string{p.Dir}, p.Writable)
	for _, path := range p.Hidden {
		for _, q := range withReal(path) {
			info, err := os.Stat(q)
			switch {
			case err != nil:
				// Not there to hide.
			case covered(q, hiddenDirs, writable):
				// Gone with the hidden directory it is in: an empty file
				// there would only say it exists.
			case info.IsDir():
				add("--tmpfs", q)
			default:
				add("--ro-bind-file", q)
			}
		}
	}
	// Parents first: a tmpfs over the data directory, then a work tree
	// inside it bound on top; a writable home, then a data directory in it
	// hidden on top. Equal depths keep their order: private, writable,
	// hidden.
	slices.SortStableFunc(mounts, func(a, b mount) int { return a.depth() - b.depth() })
	out := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		// A process namespace of its own: the agent sees no other process,
		// so it reads neither another agent's environment nor the daemon's
		// memory through /proc.
		"--unshare-pid",
		"--unshare-ipc",
	}
	if p.Network == NetworkNone {
		out = append(out, "--unshare-net")
	}
	for _, m := range mounts {
		switch m.op {
		case "--bind":
			if _, err := os.Stat(m.path); err != nil {
				continue
			}
			out = append(out, "--bind", m.path, m.path)
		case "--tmpfs":
			out = append(out, "--tmpfs", m.path)
		case "--ro-bind-file":
			out = append(out, "--ro-bind", os.DevNull, m.path)
		}
	}
	return append(append(out, "--chdir", p.Dir, "--"), append([]string{program}, args...)...), nil
}

// covered reports whether path lies inside one of the hidden directories
// and no writable path between brings it back.
func covered(path string, hidden, writable []string) bool {
	for _, d := range hidden {
		if d == path || !inside(path, d) {
			continue
		}
		back := slices.ContainsFunc(writable, func(w string) bool { return inside(w, d) && inside(path, w) })
		if !back {
			return true
		}
	}
	return false
}

// inside reports whether path is dir or lies inside it.
func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// withReal returns path and, when it differs, the path with its symlinks
// resolved.
func withReal(path string) []string {
	path = filepath.Clean(path)
	real, err := filepath.EvalSymlinks(path)
	if err != nil || real == path {
		return []string{path}
	}
	return []string{path, real}
}

// Wrap returns the command that runs program with args under the policy:
// bwrap's path and its arguments. It fails with ErrUnavailable when bwrap
// cannot make a sandbox here, so that the caller refuses the launch
// instead of running the agent unsandboxed. A program named without a
// slash is looked up in this process's PATH, as exec.Command would.
func Wrap(ctx context.Context, p Policy, program string, args []string) (string, []string, error) {
	bwrap, err := Check(ctx)
	if err != nil {
		return "", nil, err
	}
	if !strings.Contains(program, "/") {
		if program, err = exec.LookPath(program); err != nil {
			return "", nil, err
		}
	}
	argv, err := p.Args(program, args)
	if err != nil {
		return "", nil, err
	}
	return bwrap, argv, nil
}

// checked holds the paths of the bwraps that made a sandbox here once: a
// host that can stays able to, while one that cannot may be fixed while
// the daemon runs, so failures are not kept.
var checked struct {
	sync.Mutex
	ok map[string]bool
}

// checkTimeout bounds the trial run of bwrap.
const checkTimeout = 10 * time.Second

// Check finds bwrap and runs /bin/true in a sandbox as Wrap makes them. It
// returns bwrap's path, or an error wrapping ErrUnavailable that says why
// and how to fix it.
func Check(ctx context.Context) (string, error) {
	path, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: bwrap is not installed (%v): install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap)", ErrUnavailable, err)
	}
	checked.Lock()
	defer checked.Unlock()
	if checked.ok[path] {
		return path, nil
	}
	dir, err := os.MkdirTemp("", "agentjournal-sandbox-check-")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer os.RemoveAll(dir)
	argv, err := Policy{Dir: dir, Network: NetworkNone}.Args("/bin/true", nil)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, argv...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = err.Error()
		}
		return "", fmt.Errorf("%w: %s cannot make a sandbox: %s; it needs unprivileged user namespaces: "+
			"check that sysctl user.max_user_namespaces is above 0, kernel.unprivileged_userns_clone is 1 where it exists, "+
			"and kernel.apparmor_restrict_unprivileged_userns is 0 or an AppArmor profile allows bwrap (Ubuntu 24.04 and later); "+
			"a container needs to be allowed to create namespaces", ErrUnavailable, path, why)
	}
	if checked.ok == nil {
		checked.ok = map[string]bool{}
	}
	checked.ok[path] = true
	return path, nil
}
