// Package commands resolves the slash commands an operator types (in the
// console's prompt box, the CLI's cmd command or the API) into exactly one
// typed invocation, following spec 003's "Slash Command Resolution":
//
//  1. the Mission-native registry (/checkpoint, /blocked, /read, /attach,
//     /verify, /summarize-diff, /impact);
//  2. the execution's cross-agent message descriptors (/prompt, /interrupt …);
//  3. the execution's adapter-scoped message descriptors, those its adapter
//     declares and those the agent advertised itself (Claude Code's init
//     slash_commands, ACP's available_commands_update);
//  4. a terminal-only raw input intent, only when the terminal lane has
//     focus (the operator chose it).
//
// Anything else is a *ParseError that names the input shape expected.
// Complete lists the commands an execution offers for a prefix.
//
// The package owns the grammar, the registry and the resolution; it is
// pure: it reads a View of the execution and touches no journal, process
// or file. Carrying an invocation out (appending the checkpoint, the
// message, the observation or the owner effect) is the daemon's: see
// runtime.Runtime.Invoke. It does not decide which descriptors an
// execution has; the journal's header and the agent's own advertisements,
// folded by execution.State, do.
package commands
