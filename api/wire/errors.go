package wire

// Error codes: the code of every error answer. Clients switch on them, so
// none is ever renamed.
const (
	CodeInvalidField     = "invalid_field"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeTimeout          = "timeout"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
	// CodeDamaged: the journal has records missing from the log.
	CodeDamaged = "damaged"
	// CodeDiskFull: the disk holding the log is full; writes are refused
	// until space is freed, and then taken again without a restart.
	CodeDiskFull = "disk_full"
	// CodeHostError: the host of the fleet that runs the execution could
	// not answer a command forwarded to it (its answer too large for the
	// log's NATS, say); the message names the host and why.
	CodeHostError = "host_error"
)

// ErrorBody is the one error shape of the API:
// {"error":{code,message,field,accepted}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what went wrong: a code, a message for people, and for a
// request at fault the field and what it accepts.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the request field at fault, as a JSON path, a query
	// parameter or a header.
	Field string `json:"field,omitempty"`
	// Accepted lists the values or fields accepted there, when the set is
	// fixed.
	Accepted []string `json:"accepted,omitempty"`
	// Imported is, in a fork or a resume refused (409) because the
	// execution's journal was imported from a file, the command and
	// directory that would run: shown to the operator, and restated in the
	// request's confirmImported to run them.
	Imported *ImportedCommand `json:"imported,omitempty"`
}

// ImportedCommand is what a fork or a resume of an execution whose journal
// was imported would run, from its header: a file, not a launch on this
// log, gave it.
type ImportedCommand struct {
	AgentID string `json:"agentId"`
	// Command is the program and its arguments; empty for the agent's
	// default program.
	Command          []string `json:"command"`
	WorkingDirectory string   `json:"workingDirectory"`
}
