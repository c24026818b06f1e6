package wire

import (
	"time"

	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// Terminal is an execution's terminal lane as the API shows it: the answer
// of the terminal routes, and the data of a terminal event.
type Terminal struct {
	AgentExecutionID string `json:"agentExecutionId"`
	// TerminalID is the execution's lane; empty when it has none.
	TerminalID string `json:"terminalId,omitempty"`
	// Available reports a lane whose process runs: input reaches it.
	Available bool              `json:"available"`
	Snapshot  *TerminalSnapshot `json:"snapshot,omitempty"`
}

// TerminalSnapshot is a lane's screen, size and scrollback: the form of
// terminal.Snapshot on the wire, its recent output without marker lines.
// terminal.Snapshot converts to it; it cannot be an alias of this one, as
// the read model's and the search index's types are, while the execution
// package, which this one refers to, imports terminal.
type TerminalSnapshot struct {
	ID               string `json:"id"`
	AgentExecutionID string `json:"agentExecutionId,omitempty"`
	// Command is the command line, arguments quoted as a shell would need.
	Command string `json:"command"`
	Cols    uint16 `json:"cols"`
	Rows    uint16 `json:"rows"`
	// Connected reports that the PTY is open and its output is being read.
	Connected bool `json:"connected"`
	// Dead reports that the process has exited; ExitCode and ExitedAt are
	// set from then on.
	Dead bool `json:"dead"`
	// ExitCode is the process's exit status, or 128+n when signal n
	// killed it (the shell convention).
	ExitCode *int `json:"exitCode,omitempty"`
	// Recent is the tail of the output, raw (escape sequences included)
	// and starting on a rune boundary.
	Recent        string     `json:"recent"`
	RecordingPath string     `json:"recordingPath,omitempty"`
	StartedAt     time.Time  `json:"startedAt"`
	ExitedAt      *time.Time `json:"exitedAt,omitempty"`
}

// TerminalAttach is the body of POST /v1/executions/{id}/terminal/attach.
type TerminalAttach struct {
	TerminalID string `json:"terminalId"`
}

// TerminalInput is the body of POST /v1/executions/{id}/terminal/input:
// text to type, a new size, or both.
type TerminalInput struct {
	Data string `json:"data,omitempty"`
	Cols uint16 `json:"cols,omitempty"`
	Rows uint16 `json:"rows,omitempty"`
}

// Output answers GET /v1/executions/{id}/output: a page of the lines the
// agent printed that are in no record.
type Output struct {
	Lines []outputlog.Entry `json:"lines"`
	// First is the oldest line still kept (older ones were rotated
	// away); absent when there is none.
	First uint64 `json:"first,omitempty"`
	// Next is the from of the next page.
	Next uint64 `json:"next"`
}
