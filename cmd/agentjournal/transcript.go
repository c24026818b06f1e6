package main

import (
	"io"

	"github.com/agentjournal/agentjournal/transcript"
)

// colorOutput reports whether what is written to the command's stdout is
// coloured: stdout is a terminal and the environment does not refuse
// colours (transcript.UseColor).
func (e *Env) colorOutput() bool {
	return e.stdoutFile != nil && transcript.UseColor(e.stdoutFile, e.Getenv)
}

// newTranscript returns a transcript writer to w in the terminal's form,
// coloured when stdout is a terminal; label, when not empty, goes before
// every line.
func (e *Env) newTranscript(w io.Writer, label string) *transcript.Writer {
	return transcript.New(w, transcript.Options{Format: transcript.FormatText, Color: e.colorOutput(), Label: label})
}
