// Package policy owns the observation policy: Decide, a pure function from
// an observation (or an answering message) and the execution's replayed
// state to a decision and the records that carry it out, and the Subscriber
// that reads the log, decides and appends the outcome.
//
// The rules: noisy progress, token usage, streaming summaries and transient
// targets become activity.updated; attention moves through state.changed as
// the attention table says (execution.NextAttention, shown in the Attention
// section of docs/architecture.md): needs_input, blocked and claims open
// what they wait for, the agent's progress or a message to it ends blocked,
// an answer closes its request; status phases set activity; claims also
// route an owner effect; anything about a finished execution is rejected.
// Every outcome has deterministic ids derived from the observation or
// message it answers, so deciding twice, in one process or two, appends
// nothing new.
//
// A record is decided as if the decisions on the records before it had
// been carried out at once: the state changes the policy appended after it
// are folded into the state it decides on, so a decision that lands late
// does not make the next one out of order.
//
// The Subscriber keeps the state of the journals it has decided in, folded
// from the records the log delivers in order, its own decisions included:
// in the steady state each delivered record is the next of its journal, so
// a decision reads nothing from the log. A journal is read when the
// subscriber first decides in it, and again only when records are missing
// (another subscriber had the log meanwhile) or a record comes again.
//
// The Subscriber takes many records at once and decides different
// journals' concurrently, each journal's one at a time in log order, so
// that a journal's decisions land in its order while the appends of many
// journals' decisions are in flight together. A record a stopped
// subscriber left undecided is decided before a later record of its
// journal that reaches the next one first.
package policy
