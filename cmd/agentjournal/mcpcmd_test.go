package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/execution"
)

// TestMCPBridge runs mcp the way a launched agent does: with the address
// and token the daemon put in its environment, speaking MCP on stdio.
func TestMCPBridge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url, token, _ := startServe(t, dir)

	// The agent writes down the environment it got, then waits.
	envFile := filepath.Join(t.TempDir(), "env")
	script := `printf '%s\n%s\n' "$AGENTJOURNAL_MCP_URL" "$AGENTJOURNAL_TOKEN" > ` + envFile + `.tmp && mv ` + envFile + `.tmp ` + envFile + ` && exec sleep 60`
	id := launched(t, dir, "--", "/bin/sh", "-c", script)
	var agentEnv []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, err := os.ReadFile(envFile)
		if err == nil {
			agentEnv = strings.Split(strings.TrimSpace(string(data)), "\n")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent never wrote its environment: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(agentEnv) != 2 || agentEnv[0] != url+"/mcp" || agentEnv[1] == "" || agentEnv[1] == token {
		t.Fatalf("the agent's environment: %q, want the MCP address and a scoped token", agentEnv)
	}
	env := map[string]string{mcpURLEnv: agentEnv[0], tokenEnv: agentEnv[1]}

	agentIn, bridgeOut := io.Pipe()
	bridgeIn, agentOut := io.Pipe()
	t.Cleanup(func() {
		agentIn.Close()
		bridgeOut.Close()
		bridgeIn.Close()
		agentOut.Close()
	})
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		m := Main{Stdin: bridgeIn, Stdout: bridgeOut, Stderr: &stderr, Getenv: func(k string) string { return env[k] }}
		done <- m.Run(t.Context(), []string{"--data", dir, "mcp"})
	}()

	c := sdk.NewClient(&sdk.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.IOTransport{Reader: agentIn, Writer: agentOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "signal_progress", Arguments: map[string]any{"summary": "indexed the repository"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("signal_progress answered an error: %+v", res.Content)
	}
	var found bool
	for _, r := range journalRecords(t, url, token, id) {
		sig, _ := r["signal"].(map[string]any)
		if r["type"] == "observation.recorded" && r["source"] == "mcp" && sig["type"] == "progress" &&
			sig["payload"].(map[string]any)["summary"] == "indexed the repository" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the journal of %s holds no progress observation from mcp:\n%s", id, mustJSON(journalRecords(t, url, token, id)))
	}
	st := awaitState(t, dir, id, "the progress", func(st execution.State) bool {
		return st.Latest.Progress != nil && st.Latest.Progress.Summary == "indexed the repository"
	})
	if len(st.ProcessedObservations) != 1 {
		t.Errorf("%d observations, want 1", len(st.ProcessedObservations))
	}

	// The agent leaving ends the bridge.
	cs.Close()
	awaitExitOK(t, done, "mcp after the agent left", &stderr)
	mustRun(t, dir, "stop", id)
}

func TestMCPWithoutEnvironment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"nothing", nil, nil, "$AGENTJOURNAL_MCP_URL (or --url) and $AGENTJOURNAL_TOKEN (or --token) are not set; the daemon sets them for the agents it launches"},
		{"no token", map[string]string{mcpURLEnv: "http://127.0.0.1:1/mcp"}, nil, "$AGENTJOURNAL_TOKEN (or --token) is not set; the daemon sets AGENTJOURNAL_MCP_URL and AGENTJOURNAL_TOKEN for the agents it launches"},
		{"no url", map[string]string{tokenEnv: "t"}, nil, "$AGENTJOURNAL_MCP_URL (or --url) is not set"},
		{"unreachable", nil, []string{"--url", "http://127.0.0.1:1/mcp", "--token", "t"}, "connect to the agentjournal daemon at http://127.0.0.1:1/mcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			m := Main{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: func(k string) string { return tc.env[k] }}
			code := m.Run(t.Context(), append([]string{"--data", t.TempDir(), "mcp"}, tc.args...))
			if code != exitError || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 mentioning %q", code, stderr.String(), tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}
