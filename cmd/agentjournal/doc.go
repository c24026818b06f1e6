// Command agentjournal is the agentjournal binary: it keeps, for every
// AgentExecution, a durable journal of what the agent was asked, what was
// observed, what was decided and how its state moved.
//
// Every command opens the embedded NATS server on the data directory
// (--data, $AGENTJOURNAL_DATA, $XDG_DATA_HOME/agentjournal or
// ~/.local/share/agentjournal), works on the journal store over it, and closes
// both before it exits. Only one process may hold a data directory at a time;
// a second one fails at once and names the holder.
//
// The commands:
//
//	agentjournal demo             write a realistic example journal and print it
//	agentjournal journal ls       list the journals
//	agentjournal journal cat ID   print one journal
//	agentjournal journal export   write one journal as agent-journals/<id>.interaction.jsonl
//	agentjournal journal import   load a journal from a JSONL file
//	agentjournal log              print the global log, every journal interleaved
//
// This package owns flags, output formats and exit codes (0 success, 1
// failure, 2 bad usage). It does not own records, stores or the bus: those
// live in eventstore and bus, and each command is a thin layer over them.
package main
