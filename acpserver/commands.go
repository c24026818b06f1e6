package acpserver

import (
	"context"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentjournal/agentjournal/client"
	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// advertiseCommands tells the editor the slash commands the execution
// offers (the daemon's completions: Mission-native, cross-agent and
// adapter-scoped), so its prompt box can complete them.
func (ss *session) advertiseCommands(ctx context.Context) {
	cs, err := ss.srv.client.Commands(ctx, ss.id, "", commands.FocusPrompt)
	if err != nil {
		ss.srv.log.Warn("list the commands", "execution", ss.id, "err", err)
		return
	}
	list := make([]sdk.AvailableCommand, 0, len(cs))
	for _, c := range cs {
		desc := c.Description
		if c.Portability == eventstore.PortabilityAdapterScoped && c.AdapterID != "" {
			desc = strings.TrimSpace(desc + " (" + c.AdapterID + ")")
		}
		ac := sdk.AvailableCommand{Name: c.Command, Description: desc}
		if strings.Contains(c.InputShape, "<") || strings.Contains(c.InputShape, "[") {
			_, hint, _ := strings.Cut(c.InputShape, " ")
			ac.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: hint}}
		}
		list = append(list, ac)
	}
	u := sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: list, SessionUpdate: "available_commands_update"}}
	if err := ss.srv.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(ss.id), Update: u}); err != nil {
		ss.srv.log.Warn("session/update", "execution", ss.id, "err", err)
	}
}

// advertises reports a record that changes the commands the execution
// offers: the agent advertised its own.
func advertises(rec eventstore.Record) bool {
	o, ok := rec.(*eventstore.Observation)
	return ok && o.Payload[execution.AdvertisedCommandsKey] != nil
}

// runCommand carries out a slash command the editor sent as a prompt when
// the daemon resolves it to a Mission-native command, which is no turn of
// the agent: the answer is the command's result, as an agent message, and
// the turn ends at once. It reports false, doing nothing, for text the
// daemon resolves to a message of the agent (/prompt, an adapter-scoped
// command) or does not know: that goes to the agent as the prompt, as the
// editor typed it.
func (s *Server) runCommand(ctx context.Context, ss *session, text string) (bool, error) {
	preview, err := s.client.Command(ctx, ss.id, client.CommandRequest{Text: text}, true)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "unknown command"):
		return false, nil
	case err != nil:
		return true, daemonErr(err)
	case preview.Invocation.Portability != eventstore.PortabilityMissionNative:
		return false, nil
	}
	res, err := s.client.Command(ctx, ss.id, client.CommandRequest{Text: text}, false)
	if err != nil {
		return true, daemonErr(err)
	}
	u := sdk.UpdateAgentMessageText(res.Invocation.Operation + ": " + res.Result.Summary)
	if err := s.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sdk.SessionId(ss.id), Update: u}); err != nil {
		s.log.Warn("session/update", "execution", ss.id, "err", err)
	}
	return true, nil
}
