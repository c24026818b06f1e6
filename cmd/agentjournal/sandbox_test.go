//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// probeScript is an agent that tries what a sandboxed agent must not do,
// and what it must, and writes one line per try to probes.txt in its
// working directory: "NAME: ok OUTPUT" or "NAME: failed OUTPUT".
const probeScript = `
try() { name=$1; shift; if out=$("$@" 2>&1); then r=ok; else r=failed; fi; echo "$name: $r $out" | tr '\n' ' ' >> probes.txt; echo >> probes.txt; }
try api-token cat "$DATA/api-token"
try nats-secret cat "$DATA/nats-secret"
try scoped-secret cat "$DATA/scoped-token.secret"
try data-dir ls -A "$DATA"
try profile cat "$PROFILE"
try write-outside sh -c "echo x > '$OUTSIDE/escaped'"
try write-etc sh -c "echo x > /etc/agentjournal-escaped"
try write-inside sh -c "echo x > inside && cat inside"
try nats timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$NATS_PORT"' || exit 1
IFS= read -r info <&3; echo "${info%% *}"
printf "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n" >&3
IFS= read -r reply <&3; echo "$reply"'
`

// sandboxHost is a daemon's data directory, an environment profile and a
// work tree under /var/tmp, on the disk as they are on a host: under
// t.TempDir() (/tmp) they would be missing from the sandbox's private /tmp
// whether or not it hid them.
type sandboxHost struct {
	root, data, profile, work, outside string
}

func newSandboxHost(t *testing.T) sandboxHost {
	t.Helper()
	root, err := os.MkdirTemp("/var/tmp", "agentjournal-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := sandboxHost{root: root, data: filepath.Join(root, "data"), profile: filepath.Join(root, "profile.env"),
		work: filepath.Join(root, "work"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{h.work, h.outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(h.profile, []byte("MODEL_KEY=sk-profile-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// probes runs probeScript as a launch of the daemon on h with the launch
// flags given, and returns its lines by name and the journal's header.
func (h sandboxHost) probes(t *testing.T, url, token string, natsPort int, flags ...string) (map[string]string, map[string]any) {
	t.Helper()
	args := append(slices.Clone(flags), "--dir", h.work, "--env", "DATA="+h.data, "--env", "PROFILE="+h.profile,
		"--env", "OUTSIDE="+h.outside, "--env", fmt.Sprintf("NATS_PORT=%d", natsPort), "--", "/bin/sh", "-c", probeScript)
	id := launched(t, h.data, args...)
	if st := awaitFinal(t, h.data, id); st.Lifecycle != eventstore.LifecycleCompleted {
		t.Fatalf("the probing agent ended %s (%s), want completed", st.Lifecycle, st.LifecycleReason)
	}
	data, err := os.ReadFile(filepath.Join(h.work, "probes.txt"))
	if err != nil {
		t.Fatalf("the agent wrote no probes in its working directory: %v", err)
	}
	os.Remove(filepath.Join(h.work, "probes.txt"))
	got := map[string]string{}
	for line := range strings.Lines(string(data)) {
		if name, rest, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
			got[name] = rest
		}
	}
	return got, journalRecords(t, url, token, id)[0]
}

// TestSandboxedAgent runs an agent that reads the daemon's secrets,
// writes outside its working directory and inside, and talks to the
// daemon's NATS listener: unsandboxed it can do all of it (which is why
// the sandbox exists); under --sandbox the secrets are not there, writes
// outside fail, and NATS answers but refuses it without the secret; with
// --sandbox-network none it cannot connect at all.
func TestSandboxedAgent(t *testing.T) {
	h := newSandboxHost(t)
	port := fixtures.FreePorts(t, 1)[0]
	url, token, _ := startServe(t, h.data, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", port), "--env-profile", "model="+h.profile)

	open, _ := h.probes(t, url, token, port)
	for _, name := range []string{"api-token", "nats-secret", "profile", "write-outside"} {
		if !strings.HasPrefix(open[name], "ok") {
			t.Errorf("unsandboxed, %s: got %q, want ok (the exposure the sandbox closes)", name, open[name])
		}
	}
	os.Remove(filepath.Join(h.outside, "escaped"))

	for _, tc := range []struct {
		name, network string
		flags         []string
		// want is, by probe, how it ends (ok or failed) and what its
		// output holds.
		want map[string][2]string
	}{
		{"host network", "host", []string{"--sandbox"}, map[string][2]string{
			"api-token":     {"failed", filepath.Join(h.data, "api-token") + ": No such file or directory"},
			"nats-secret":   {"failed", filepath.Join(h.data, "nats-secret") + ": No such file or directory"},
			"scoped-secret": {"failed", filepath.Join(h.data, "scoped-token.secret") + ": No such file or directory"},
			"data-dir":      {"ok", ""},
			"profile":       {"failed", h.profile + ": Permission denied"},
			"write-outside": {"failed", "Read-only file system"},
			"write-etc":     {"failed", "Read-only file system"},
			"write-inside":  {"ok", "x"},
			// NATS answers with its INFO, then refuses a client without
			// the secret.
			"nats": {"ok", "INFO -ERR 'Authorization Violation'"},
		}},
		{"no network", "none", []string{"--sandbox", "--sandbox-network", "none"}, map[string][2]string{
			"api-token":    {"failed", "No such file or directory"},
			"write-inside": {"ok", "x"},
			"nats":         {"failed", "Connection refused"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, header := h.probes(t, url, token, port, tc.flags...)
			for name, want := range tc.want {
				if status, out, _ := strings.Cut(got[name], " "); status != want[0] || !strings.Contains(out, want[1]) {
					t.Errorf("%s: got %q, want %s with %q", name, got[name], want[0], want[1])
				}
			}
			if got["data-dir"] != "ok" && tc.network == "host" {
				t.Errorf("the data directory in the sandbox: got %q, want it empty", got["data-dir"])
			}
			if fileExists(filepath.Join(h.outside, "escaped")) {
				t.Error("the sandboxed agent wrote outside its working directory")
			}
			sb, _ := header["sandbox"].(map[string]any)
			hidden, _ := sb["hidden"].([]any)
			writable, _ := sb["writable"].([]any)
			if sb == nil || sb["network"] != tc.network || !slices.Contains(hidden, any(h.data)) || !slices.Contains(hidden, any(h.profile)) ||
				!slices.Contains(writable, any(h.work)) {
				t.Errorf("the header's sandbox: got %v, want network %s, %s and %s hidden and %s writable", header["sandbox"], tc.network, h.data, h.profile, h.work)
			}
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestSandboxDefault: serve --sandbox sandboxes a launch that does not
// say, --sandbox=false opts out, and under --sandbox=required an opt-out
// is refused, saying why.
func TestSandboxDefault(t *testing.T) {
	h := newSandboxHost(t)
	url, token, stop := startServe(t, h.data, "--sandbox")
	got, header := h.probes(t, url, token, 0)
	if !strings.HasPrefix(got["api-token"], "failed") || header["sandbox"] == nil {
		t.Errorf("serve --sandbox, a launch that does not say: api-token %q, header sandbox %v; want it sandboxed", got["api-token"], header["sandbox"])
	}
	got, header = h.probes(t, url, token, 0, "--sandbox=false")
	if !strings.HasPrefix(got["api-token"], "ok") || header["sandbox"] != nil {
		t.Errorf("launch --sandbox=false: api-token %q, header sandbox %v; want it unconfined", got["api-token"], header["sandbox"])
	}
	stop()

	startServe(t, h.data, "--sandbox=required")
	r := run(t, h.data, "launch", "--sandbox=false", "--dir", h.work, "--", "/bin/true")
	if r.code == exitOK || !strings.Contains(r.stderr, "serve --sandbox=required") {
		t.Errorf("an opt-out under --sandbox=required: exit %d, stderr %q; want it refused naming serve --sandbox=required", r.code, r.stderr)
	}
	r = run(t, h.data, "launch", "--sandbox=false", "--sandbox-network", "none", "--dir", h.work, "--", "/bin/true")
	if r.code == exitOK || !strings.Contains(r.stderr, "the flags of a sandbox go with one") {
		t.Errorf("--sandbox=false with --sandbox-network: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
	r = run(t, h.data, "launch", "--sandbox-network", "wifi", "--dir", h.work, "--", "/bin/true")
	if r.code == exitOK || !strings.Contains(r.stderr, `unknown network "wifi" (want host or none)`) {
		t.Errorf("--sandbox-network wifi: exit %d, stderr %q; want the networks named", r.code, r.stderr)
	}
}
