package runtime_test

import (
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
	"github.com/agentjournal/agentjournal/fixtures/realagent"
)

// TestACPAdvertisedCommandsOfARealAdapter: Claude Code through its ACP
// adapter (claude-code-acp, as fixtures/realagent pins it), driven by the
// scripted model server, sends available_commands_update; the journal
// records the commands as adapter-scoped descriptors of claude-code-acp,
// which completions offer.
func TestACPAdvertisedCommandsOfARealAdapter(t *testing.T) {
	srv := modelserver.Start(t, modelserver.Scenario{Turns: []modelserver.Turn{{Text: "Done.", Usage: modelserver.Usage{InputTokens: 10, OutputTokens: 2}}}})
	r := newRig(t, 5*time.Second)
	ref := r.launchAdapter(t, "claude-code-acp", realagent.ClaudeEnv(t, srv.URL()), t.TempDir(), "Say done")
	r.awaitReal(t, ref, srv, "advertised commands", func() bool { return len(r.replay(t, ref).AdvertisedMessages) > 0 })
	st := r.replay(t, ref)
	for _, d := range st.AdvertisedMessages {
		if d.Portability != eventstore.PortabilityAdapterScoped || d.AdapterID != "claude-code-acp" {
			t.Fatalf("advertised descriptor %+v, want adapter-scoped of claude-code-acp", d)
		}
	}
	offered := 0
	for _, c := range commands.Complete(commands.ViewOf(st), "/", commands.FocusPrompt) {
		if c.Portability == eventstore.PortabilityAdapterScoped && c.AdapterID == "claude-code-acp" {
			offered++
		}
	}
	if offered == 0 {
		t.Errorf("completions offer none of the %d advertised commands", len(st.AdvertisedMessages))
	}
	t.Logf("claude-code-acp advertised %d commands", len(st.AdvertisedMessages))
}
