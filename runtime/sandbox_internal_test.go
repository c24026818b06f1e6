package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// TestSandboxUnavailableRefusesTheLaunch: a launch that asks for a
// sandbox on a host without bwrap is refused before its header, saying how
// to fix it, and its agent never runs unconfined.
func TestSandboxUnavailableRefusesTheLaunch(t *testing.T) {
	ctx := context.Background()
	s := internalStore(t)
	rt := internalRuntime(t, Config{Store: s})
	work := t.TempDir()
	witness := filepath.Join(work, "ran")
	t.Setenv("PATH", t.TempDir())
	ref, err := rt.Launch(ctx, LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "t-sbx", Dir: work,
		Command: []string{"/bin/sh", "-c", "touch " + witness}, Sandbox: &SandboxRequest{Enabled: true}})
	if !errors.Is(err, ErrBadLaunch) || !strings.Contains(err.Error(), "install bubblewrap") || !strings.Contains(err.Error(), "nothing was run") {
		t.Fatalf("got %v, want ErrBadLaunch saying nothing was run and to install bubblewrap", err)
	}
	if _, err := execution.ReplayLineage(ctx, s, ref); err == nil {
		t.Error("the refused launch has a journal")
	}
	if _, err := os.Stat(witness); err == nil {
		t.Error("the agent ran")
	}
}

// TestStateDirs: a CLI's state paths are found under the agent's HOME, or
// where its variable points, and a missing directory is made.
func TestStateDirs(t *testing.T) {
	home, conf := t.TempDir(), t.TempDir()
	a, err := NewAdapter("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	got, err := stateDirs(a, []string{"HOME=/elsewhere", "HOME=" + home, "CLAUDE_CONFIG_DIR=" + conf})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{conf, filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if info, err := os.Stat(filepath.Join(home, ".claude")); err != nil || !info.IsDir() {
		t.Errorf("~/.claude was not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude.json")); err == nil {
		t.Error("~/.claude.json was made: a state file is the CLI's to write")
	}
	g, _ := NewAdapter("generic")
	if got, _ := stateDirs(g, []string{"HOME=" + home}); len(got) != 0 {
		t.Errorf("the generic agent's state: got %q, want none", got)
	}
}
