//go:build unix

package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
	"github.com/agentjournal/agentjournal/fixtures/modelserver"
)

// TestRealClaudeCodeAdvertisedCommands: the real Claude Code CLI at its
// pinned version, driven by the scripted model server, lists its slash
// commands in its init line; the journal records them once as
// adapter-scoped descriptors of claude-code, which completions offer apart
// from the Mission-native and cross-agent commands and which resolution
// turns into adapter-scoped messages. A command it did not advertise is no
// Mission command.
func TestRealClaudeCodeAdvertisedCommands(t *testing.T) {
	t.Parallel()
	c := realCLIs[slices.IndexFunc(realCLIs, func(c realCLI) bool { return c.agent == "claude-code" })]
	r := runScenario(t, c, modelserver.Scenario{Turns: []modelserver.Turn{{Text: "Done.",
		Usage: modelserver.Usage{InputTokens: 10, OutputTokens: 2}}}}, "Say done")
	if r.res.code != exitOK {
		r.failf(t, "run exit %d, want 0", r.res.code)
	}
	var adv []*eventstore.Observation
	for _, rec := range r.records {
		if o, ok := rec.(*eventstore.Observation); ok && o.Payload[execution.AdvertisedCommandsKey] != nil {
			adv = append(adv, o)
		}
	}
	if len(adv) != 1 {
		r.failf(t, "%d advertised-commands observations, want 1", len(adv))
	}
	st := r.state(t)
	if len(st.AdvertisedMessages) < 5 {
		r.failf(t, "advertised descriptors %+v, want Claude Code's slash commands", st.AdvertisedMessages)
	}
	types := []string{}
	for _, d := range st.AdvertisedMessages {
		if d.Portability != eventstore.PortabilityAdapterScoped || d.AdapterID != "claude-code" {
			r.failf(t, "advertised descriptor %+v, want adapter-scoped of claude-code", d)
		}
		types = append(types, d.Type)
	}
	for _, want := range []string{"compact", "context"} {
		if !slices.Contains(types, want) {
			r.failf(t, "advertised %v lacks /%s", types, want)
		}
	}
	v := commands.ViewOf(st)
	byPortability := map[eventstore.Portability][]string{}
	for _, cm := range commands.Complete(v, "", commands.FocusPrompt) {
		byPortability[cm.Portability] = append(byPortability[cm.Portability], cm.Label)
	}
	if !slices.Contains(byPortability[eventstore.PortabilityAdapterScoped], "/context") ||
		!slices.Contains(byPortability[eventstore.PortabilityMissionNative], "/checkpoint") ||
		!slices.Contains(byPortability[eventstore.PortabilityCrossAgent], "/prompt") {
		r.failf(t, "completions by portability %v, want /context adapter-scoped apart from /checkpoint and /prompt", byPortability)
	}
	inv, err := commands.Resolve(v, "/context", commands.FocusPrompt)
	if err != nil || inv.Portability != eventstore.PortabilityAdapterScoped || inv.AdapterID != "claude-code" {
		r.failf(t, "/context resolved to %+v, %v; want an adapter-scoped message of claude-code", inv, err)
	}
	if _, err := commands.Resolve(v, "/surely-not-a-claude-command", commands.FocusPrompt); err == nil || !strings.Contains(err.Error(), "unknown command") {
		r.failf(t, "an unadvertised command resolved (%v), want unknown", err)
	}
}
