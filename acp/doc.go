// Package acp speaks the client side of the Agent Client Protocol (ACP:
// JSON-RPC 2.0 over an agent's stdio) for one agent process, on top of
// github.com/coder/acp-go-sdk, whose types stay inside this package.
//
// It owns the protocol obligations of a client: the initialize and
// session/new handshake, session/prompt and session/cancel, answering the
// agent's requests (session/request_permission through a callback that
// waits for an answer, fs/read_text_file and fs/write_text_file on regular
// files opened through an os.Root at one working directory, bounded in
// size and in how many run at once, and terminal/* running commands in a
// directory opened the same way, each in a process group of its own, with
// bounded output), and reading the agent's messages into plain values
// (Decode) for whoever records them. The agent is not trusted: nothing it
// asks may block the process or reach outside the working directory.
//
// It does not own the process, its pipes or any journal: the caller reads
// the agent's stdout and hands each line to Client.Feed, gives the Client a
// function that writes to the agent's stdin, and decides what the messages
// mean. Protocol version: ProtocolVersion.
package acp
