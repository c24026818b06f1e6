// Package transcript tells an execution's journal as a reader follows a
// conversation: the prompt, the agent's messages (Markdown rendered for a
// terminal), one line for each tool call with its outcome, plans,
// questions with their numbered choices and the answers with who gave
// them, the end of each turn with its tokens and time, and the end of the
// execution with its lifecycle and reason. What only the journal's
// bookkeeping needs (deliveries that went through, policy decisions,
// activity heartbeats, usage telemetry, diagnostics) is left out.
//
// It reads records, in journal order, as the store or the API's journal
// route gives them, and streams: a Builder turns each record into the
// entries it adds, at once, so that run and tail -f show a running
// execution as it goes and never reorder. The one exception is a tool
// call, told once, at its end, with the target its start named; a call
// still open when the records end is told as such by Close (or Flush).
//
// A Writer renders entries as text for a terminal (SGR colours when asked:
// see UseColor, which honours NO_COLOR) or plain text, or as a Markdown
// document. The entries' JSON form is the API's (api/wire's
// TranscriptEntry), so that a client renders what the daemon built.
//
// It owns neither the records nor their storage, nor the timeline (the
// execution package's) nor the narrative of a journal (package narrative),
// which tell the same records for other readers.
package transcript
