package sandbox_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/sandbox"
)

// run runs script with sh under the policy and returns its combined output
// and whether it exited 0.
func run(t *testing.T, p sandbox.Policy, script string) (string, bool) {
	t.Helper()
	bwrap, argv, err := sandbox.Wrap(t.Context(), p, "sh", []string{"-c", script})
	if err != nil {
		t.Fatalf("wrap: %v", err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bwrap, argv...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run bwrap: %v", err)
	}
	return out.String(), err == nil
}

// layout is a data directory with secrets, a working directory and a
// home with a CLI's state directory, side by side as on a host.
type layout struct {
	data, secretFile, work, state, outside string
	// hostTmp is a file in the host's /tmp.
	hostTmp string
}

// newLayout makes the layout under /var/tmp, on the disk as a home is:
// t.TempDir() is under /tmp, which the sandbox replaces with its own.
func newLayout(t *testing.T) layout {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "agentjournal-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	f, err := os.CreateTemp("", "agentjournal-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	l := layout{data: filepath.Join(root, "data"), secretFile: filepath.Join(root, "token"),
		work: filepath.Join(root, "work"), state: filepath.Join(root, "home", ".claude"), outside: filepath.Join(root, "home"),
		hostTmp: f.Name()}
	for _, d := range []string{l.data, l.work, l.state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(l.data, "api-token"), filepath.Join(l.data, "nats-secret"), l.secretFile} {
		if err := os.WriteFile(f, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

func (l layout) policy(n sandbox.Network) sandbox.Policy {
	return sandbox.Policy{Dir: l.work, Writable: []string{l.state}, Hidden: []string{l.data, l.secretFile}, Network: n}
}

func TestSandboxedProcess(t *testing.T) {
	l := newLayout(t)
	p := l.policy(sandbox.NetworkHost)
	for _, tc := range []struct {
		name, script string
		ok           bool
		want         string
	}{
		{"the data directory's api-token is not there", "cat " + filepath.Join(l.data, "api-token"), false, "No such file or directory"},
		{"the data directory's nats-secret is not there", "cat " + filepath.Join(l.data, "nats-secret"), false, "No such file or directory"},
		{"the data directory is empty", "ls -A " + l.data + "; echo end", true, "end"},
		{"a hidden file outside it cannot be read", "cat " + l.secretFile, false, "Permission denied"},
		{"the working directory is writable", "echo hi > f && cat " + filepath.Join(l.work, "f"), true, "hi"},
		{"it starts in the working directory", "pwd", true, l.work},
		{"the CLI's state directory is writable", "echo hi > " + filepath.Join(l.state, "s") + " && echo done", true, "done"},
		{"beside it the home is not", "echo hi > " + filepath.Join(l.outside, "x"), false, "Read-only file system"},
		{"/etc is read-only", "echo hi > /etc/agentjournal-sandbox-test", false, "Read-only file system"},
		{"/tmp is private", "test -e " + l.hostTmp + " || echo absent", true, "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := run(t, p, tc.script)
			if ok != tc.ok || !strings.Contains(out, tc.want) {
				t.Fatalf("%s: got ok=%v output %q, want ok=%v and output containing %q", tc.script, ok, out, tc.ok, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(l.work, "f")); err != nil {
		t.Errorf("the file written in the working directory is not on the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(l.data, "api-token")); err != nil {
		t.Errorf("hiding the data directory touched the host's: %v", err)
	}
	// The host runs the test's own processes at least; the sandbox sees
	// its sh, its ls and grep, and bwrap's init.
	out, _ := run(t, p, "ls /proc | grep -c '^[0-9]'")
	if n, err := strconv.Atoi(strings.TrimSpace(out)); err != nil || n > 5 {
		t.Errorf("the sandbox sees %q processes, want its own few", strings.TrimSpace(out))
	}
}

// TestNetwork: with the host's network a loopback listener is reached;
// with none it is not.
func TestNetwork(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("the test connects with bash's /dev/tcp: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := "exec bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(port) + " && head -n1 <&3'"
	l := newLayout(t)
	if out, ok := run(t, l.policy(sandbox.NetworkHost), script); !ok || !strings.Contains(out, "hello") {
		t.Errorf("host network: got ok=%v %q, want the listener's hello", ok, out)
	}
	if out, ok := run(t, l.policy(sandbox.NetworkNone), script); ok || !strings.Contains(out, "Connection refused") {
		t.Errorf("no network: got ok=%v %q, want the connection refused", ok, out)
	}
}

// TestMountOrder: parents are mounted before what lies inside them, so a
// work tree inside the hidden data directory stays writable and a data
// directory inside a writable home stays hidden.
func TestMountOrder(t *testing.T) {
	root := t.TempDir()
	home, data := filepath.Join(root, "home"), filepath.Join(root, "home", "data")
	tree := filepath.Join(data, "worktrees", "w1")
	for _, d := range []string{tree} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "api-token"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := sandbox.Policy{Dir: tree, Writable: []string{home}, Hidden: []string{data}}
	argv, err := p.Args("/bin/true", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(op, path string) int {
		for i := range argv[:len(argv)-1] {
			if argv[i] == op && argv[i+1] == path {
				return i
			}
		}
		t.Fatalf("%s %s not in %q", op, path, argv)
		return -1
	}
	if h, d, w := at("--bind", home), at("--tmpfs", data), at("--bind", tree); !(h < d && d < w) {
		t.Errorf("mounts in the order home %d, data %d, work tree %d; want home, data, then work tree: %q", h, d, w, argv)
	}
	out, ok := run(t, p, "echo hi > f && cat f; cat "+filepath.Join(data, "api-token"))
	if !strings.Contains(out, "hi") || !strings.Contains(out, "No such file") || ok {
		t.Errorf("got ok=%v %q, want the work tree written and the token missing", ok, out)
	}
}

func TestPolicyValidate(t *testing.T) {
	err := sandbox.Policy{Dir: "work", Writable: []string{"rel"}, Network: "wifi"}.Validate()
	if !errors.Is(err, sandbox.ErrBadPolicy) {
		t.Fatalf("got %v, want ErrBadPolicy", err)
	}
	for _, want := range []string{`"work"`, `"rel"`, `"wifi"`, "host or none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := sandbox.ParseNetwork(""); err != nil {
		t.Errorf("the empty network: %v, want host", err)
	}
	if !slices.Contains(sandbox.Networks, sandbox.NetworkNone) {
		t.Error("none is not listed")
	}
}

// TestUnavailable: without bwrap on the PATH a sandbox is refused, and the
// error says how to install it.
func TestUnavailable(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, _, err := sandbox.Wrap(t.Context(), sandbox.Policy{Dir: t.TempDir()}, "/bin/true", nil)
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "install bubblewrap") {
		t.Fatalf("got %v, want ErrUnavailable saying to install bubblewrap", err)
	}
}
