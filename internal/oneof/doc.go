// Package oneof handles a closed string enumeration: a typed string and the
// slice of the values it accepts, in the order they are documented. The
// persisted enumerations of eventstore and the command vocabulary of
// commands are such types.
//
// It checks a value against the accepted ones and lists them the one way
// every "want one of: …" text and reference table quotes them ("a, b, c").
// It owns no values and no error texts: each enumeration keeps its own
// words, so that what a refused value is told does not change.
package oneof
