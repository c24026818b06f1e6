// Package errtally counts alike errors: many operations that fail at once
// (stops past one deadline) often fail with one message, which is one line
// to read with a count, not one line each. It owns only the counting; each
// caller words the count.
package errtally
