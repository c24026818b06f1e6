package execution_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

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
	rt := execution.NewRuntime(execution.Config{Store: s})
	ref, err := rt.Launch(context.Background(), execution.LaunchRequest{OwnerEntity: eventstore.OwnerTask, OwnerID: "host",
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
// (system_restart) instead of leaving it running forever.
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
	s, err := eventstore.OpenJetStream(context.Background(), b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName()})
	if err != nil {
		t.Fatal(err)
	}
	rt := execution.NewRuntime(execution.Config{Store: s})
	recovered, err := rt.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recovered) != fmt.Sprint([]string{id}) {
		t.Fatalf("recovered %v, want [%s]", recovered, id)
	}
	ref, err := s.Lookup(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var recs []eventstore.Record
	for e, err := range s.ReadJournal(context.Background(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, e.Record)
	}
	st, err := execution.Replay(recs)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lifecycle != eventstore.LifecycleTerminated || st.LifecycleReason != "system_restart" {
		t.Fatalf("after restart: %s (%s), want terminated (system_restart)", st.Lifecycle, st.LifecycleReason)
	}
}
