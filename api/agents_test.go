package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/runtime"
)

// GET /v1/agents lists every adapter, in the daemon's order, with what its
// CLI does itself; the answer matches openapi.yaml.
func TestAgentCatalog(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{NoPolicy: true})
	v := servedValidator(t, s.HTTP.URL)
	status, _, body := validatedGet(t, v, s.HTTP.URL, "/v1/agents")
	if status != http.StatusOK {
		t.Fatalf("GET /v1/agents: %d %s, want 200", status, body)
	}
	var got client.AgentCatalog
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	var ids []string
	byID := map[string]client.Agent{}
	for _, a := range got.Agents {
		ids = append(ids, a.ID)
		byID[a.ID] = a
	}
	if diff := cmp.Diff(runtime.Adapters(), ids); diff != "" {
		t.Errorf("the catalog's agents differ from execution.Adapters (-adapters +catalog):\n%s", diff)
	}

	conversation := []eventstore.SessionShape{eventstore.ShapeConversation, eventstore.ShapeOneShot}
	for _, tc := range []struct {
		name string
		want client.Agent
	}{
		{"generic", client.Agent{ID: "generic", Provider: "", Protocol: client.ProtocolStdin,
			TurnsOnStdin: true, Shapes: []eventstore.SessionShape{}}},
		{"claude-code", client.Agent{ID: "claude-code", Provider: "claude-code", Protocol: client.ProtocolStreamJSON,
			NativeResume: true, NativeFork: true, TurnsOnStdin: true, Approvals: true, Shapes: conversation}},
		{"codex", client.Agent{ID: "codex", Provider: "codex", Protocol: client.ProtocolExec,
			NativeResume: true, Approvals: true, Shapes: conversation}},
		{"an ACP preset", client.Agent{ID: "gemini", Provider: "acp", Protocol: client.ProtocolACP,
			NativeResume: true, TurnsOnStdin: true, Approvals: true, Shapes: conversation}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := byID[tc.want.ID]
			if !ok {
				t.Fatalf("the catalog has no %s: %v", tc.want.ID, ids)
			}
			if diff := cmp.Diff(tc.want, a); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.want.ID, diff)
			}
		})
	}

	// Every ACP agent resumes its session itself (session/load), and none
	// forks it.
	acp := 0
	for _, a := range got.Agents {
		if a.Protocol != client.ProtocolACP {
			continue
		}
		acp++
		if !a.NativeResume || a.NativeFork || a.Provider != "acp" {
			t.Errorf("ACP agent %s: nativeResume %v, nativeFork %v, provider %q; want true, false, acp", a.ID, a.NativeResume, a.NativeFork, a.Provider)
		}
	}
	if acp < 2 {
		t.Errorf("the catalog lists %d ACP agents, want acp and its presets", acp)
	}

	// It takes no query, and the API token.
	if status, _, body := validatedGet(t, v, s.HTTP.URL, "/v1/agents?all=1"); status != http.StatusBadRequest {
		t.Errorf("GET /v1/agents?all=1: %d %s, want 400", status, body)
	}
	resp, err := http.Get(s.HTTP.URL + "/v1/agents")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/agents without a token: %d, want 401", resp.StatusCode)
	}
}
