package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures"
)

const hostEnv = "AGENTJOURNAL_TEST_HOST_CHILD"

// TestHostChild is the child side of TestRecoverAfterHostKilled: a host that
// launches an agent and is then killed.
func TestHostChild(t *testing.T) {
	spec := os.Getenv(hostEnv)
	if spec == "" {
		return // run only as a child process
	}
	dir, agent, _ := strings.Cut(spec, "|")
	cfg := bus.DefaultConfig()
	cfg.DataDir = dir
	b, err := bus.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s, err := eventstore.OpenJetStream(context.Background(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rt := runtime.New(runtime.Config{Store: s, HostDir: filepath.Join(dir, "hosted")})
	ref, err := rt.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "host",
		Agent: "generic", Command: []string{agent, "sleep:60s"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("launched", ref.AgentExecutionID)
	select {}
}

// The host process is killed with SIGKILL while its agent runs: nothing
// watched the agent end, and the next start marks it terminated
// (system_restart) instead of leaving it running forever. Another host's
// agent on the same log is left alone.
func TestRecoverAfterHostKilled(t *testing.T) {
	dir := t.TempDir()
	agent := fixtures.AgentBinary(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostChild$")
	cmd.Env = append(os.Environ(), hostEnv+"="+dir+"|"+agent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var id string
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "launched "); ok {
			id = rest
			break
		}
		if strings.HasPrefix(sc.Text(), "error") {
			t.Fatal(sc.Text())
		}
	}
	if id == "" {
		t.Fatal("the host did not launch")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The orphaned agent is in its own process group; end it so the test
	// leaves nothing behind.
	exec.Command("pkill", "-f", agent+" sleep:60s").Run()

	b := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, b)
	// Another host on the same log, sharing the hosted directory, runs an
	// agent of its own: as far as the restarted host can tell from the
	// log, that one is not live either.
	other := runtime.New(runtime.Config{Store: s, HostDir: filepath.Join(dir, "hosted")})
	t.Cleanup(func() { other.Close(context.Background()) })
	otherRef, err := other.Launch(context.Background(), runtime.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "other",
		Agent: "generic", Command: []string{agent, "sleep:60s"}})
	if err != nil {
		t.Fatal(err)
	}

	rt := runtime.New(runtime.Config{Store: s, HostDir: filepath.Join(dir, "hosted")})
	recovered, err := rt.Recover(context.Background(), runtime.RecoverHosted)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recovered) != fmt.Sprint([]string{id}) {
		t.Fatalf("recovered %v, want [%s]", recovered, id)
	}
	if st := replayJournal(t, s, id); st.Lifecycle != eventstore.LifecycleTerminated || st.LifecycleReason != "system_restart" {
		t.Fatalf("after restart: %s (%s), want terminated (system_restart)", st.Lifecycle, st.LifecycleReason)
	}
	if st := replayJournal(t, s, otherRef.AgentExecutionID); st.Lifecycle != eventstore.LifecycleRunning {
		t.Fatalf("the other host's execution is %s (%s), want it left running", st.Lifecycle, st.LifecycleReason)
	}
	if again, err := rt.Recover(context.Background(), runtime.RecoverHosted); err != nil || len(again) != 0 {
		t.Fatalf("second recovery: %v, %v; want nothing", again, err)
	}
	// The dead host's directory is gone; the live one's stays.
	if dirs, _ := filepath.Glob(filepath.Join(dir, "hosted", "host-*")); len(dirs) != 1 {
		t.Errorf("host directories %q after recovery, want only the live host's", dirs)
	}
}

func replayJournal(t *testing.T, s *eventstore.JetStreamStore, id string) *execution.State {
	t.Helper()
	ref, err := s.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return replayRecords(t, fixtures.ReadJournal(t, s, ref))
}
