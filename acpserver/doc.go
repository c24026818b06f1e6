// Package acpserver speaks the agent side of the Agent Client Protocol
// (ACP: JSON-RPC 2.0 over a pair of streams, usually an editor's pipe to
// "agentjournal acp") for the executions of one agentjournal daemon, so
// that an editor opens, prompts, answers and replays journaled executions
// as ACP sessions. The ACP session id is the agentExecutionId.
//
// It owns the protocol obligations of an agent (initialize, session/new,
// session/prompt with its turn end, session/cancel, session/list,
// session/load, session/request_permission for the execution's open input
// requests) and the mapping of journal records to session/update
// notifications (Updates). It offers the execution's slash commands to the
// editor (available_commands_update) and hands a Mission-native one typed
// as a prompt to the daemon's command route. It keeps the github.com/coder/acp-go-sdk types
// inside this package's functions.
//
// It does not run agents, hold a journal or decide anything: every launch,
// message, answer and read goes through the daemon's HTTP API by the
// *client.Client it is given, so what an editor sees and does is what the
// journal holds. It does not find the daemon either (the command does).
package acpserver
