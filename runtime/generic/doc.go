// Package generic runs any program as an agent: the command after -- is
// the program, messages are text lines on its stdin (typed keys on a
// terminal lane), and its signals are stdout markers, which the runtime
// reads itself. Agent is the generic agent as the runtime registers it; its
// Driver parses nothing.
package generic
