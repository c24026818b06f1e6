package runtime

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// versionTimeout bounds the asking of a CLI's version: a program that does
// not answer --version at once is launched as of an unknown version.
const versionTimeout = 5 * time.Second

// maxVersionOutput bounds what is read of a CLI's answer to --version.
const maxVersionOutput = 4 << 10

// versions are the CLI versions asked so far, by program file: a CLI is
// asked once per file, not on every launch, and asked again when its file
// changes (an update replaces it).
type versions struct {
	// timeout bounds one asking; zero is versionTimeout.
	timeout time.Duration

	mu    sync.Mutex
	known map[versionKey]string
}

// versionKey names a program file as it is now.
type versionKey struct {
	path    string
	modTime time.Time
	size    int64
}

// agentVersion asks the launch's CLI its version, when its adapter can be
// asked (agent.Versioned), and hands it to the driver. It returns "" when
// the CLI was not asked or named no version.
func (rt *Runtime) agentVersion(adapter Adapter, driver Driver, command, env []string) string {
	v, ok := adapter.(agent.Versioned)
	if !ok {
		return ""
	}
	program, args := v.VersionCommand(command)
	version := rt.versions.ask(program, args, append(os.Environ(), env...))
	if r, ok := driver.(agent.VersionReader); ok {
		r.SetAgentVersion(version)
	}
	return version
}

// ask is the version program gives for args, from the cache when its file
// is unchanged.
func (vs *versions) ask(program string, args, env []string) string {
	path, err := exec.LookPath(program)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	key := versionKey{path: path, modTime: fi.ModTime(), size: fi.Size()}
	vs.mu.Lock()
	v, ok := vs.known[key]
	vs.mu.Unlock()
	if ok {
		return v
	}
	// Asked without the lock: a slow CLI holds up only its own launches.
	timeout := vs.timeout
	if timeout == 0 {
		timeout = versionTimeout
	}
	v = askVersion(path, args, env, timeout)
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.known == nil {
		vs.known = map[versionKey]string{}
	}
	vs.known[key] = v
	return v
}

// askVersion runs the program once, in an empty directory of its own (a
// program that is not the CLI it claims to be does what it does there,
// not in the work tree), with no input, and reads the version it prints.
func askVersion(path string, args, env []string, timeout time.Duration) string {
	dir, err := os.MkdirTemp("", "agentjournal-version-")
	if err != nil {
		return ""
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = dir, env
	var out cappedBuffer
	cmd.Stdout = &out
	// A CLI started through a wrapper (node) may leave a child holding the
	// pipe after the wrapper is killed: the wait ends anyway.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil && len(out.data) == 0 {
		return ""
	}
	return textclip.Fit(agent.ParseVersion(string(out.data)), eventstore.MaxAgentVersionLength)
}

// cappedBuffer keeps the first maxVersionOutput bytes written to it and
// takes the rest without keeping it, so that the program is not blocked.
type cappedBuffer struct{ data []byte }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := maxVersionOutput - len(b.data); room > 0 {
		b.data = append(b.data, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
