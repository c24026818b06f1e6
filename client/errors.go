package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentjournal/agentjournal/api/wire"
)

// Error codes of the API: the Code of an *Error. The daemon never renames
// one.
const (
	CodeInvalidField     = wire.CodeInvalidField
	CodeUnauthorized     = wire.CodeUnauthorized
	CodeForbidden        = wire.CodeForbidden
	CodeNotFound         = wire.CodeNotFound
	CodeMethodNotAllowed = wire.CodeMethodNotAllowed
	CodeConflict         = wire.CodeConflict
	CodeTooLarge         = wire.CodeTooLarge
	CodeTimeout          = wire.CodeTimeout
	CodeUnavailable      = wire.CodeUnavailable
	CodeInternal         = wire.CodeInternal
	CodeDamaged          = wire.CodeDamaged
	CodeDiskFull         = wire.CodeDiskFull
)

// Sentinels an *Error matches with errors.Is, one per code.
var (
	// ErrInvalidField: the request is malformed; Field and Accepted say
	// where and what is accepted.
	ErrInvalidField = errors.New("client: invalid field")
	// ErrUnauthorized: no token, or a wrong one.
	ErrUnauthorized = errors.New("client: unauthorized")
	// ErrForbidden: a scoped token used for another execution or route.
	ErrForbidden = errors.New("client: forbidden")
	// ErrNotFound: no such execution (or route, or terminal).
	ErrNotFound = errors.New("client: not found")
	// ErrMethodNotAllowed: the route takes another method.
	ErrMethodNotAllowed = errors.New("client: method not allowed")
	// ErrConflict: the request conflicts with the execution's state, e.g.
	// stopping one that does not run in this daemon.
	ErrConflict = errors.New("client: conflict")
	// ErrTooLarge: the body or a record is over its limit.
	ErrTooLarge = errors.New("client: too large")
	// ErrTimeout: no policy decision, or no caught-up read model, in time.
	ErrTimeout = errors.New("client: timeout")
	// ErrUnavailable: the log cannot be read or written now; retry.
	ErrUnavailable = errors.New("client: unavailable")
	// ErrInternal: the daemon failed; its log says why.
	ErrInternal = errors.New("client: internal error")
	// ErrDamaged: the journal has records missing from the log; writes to
	// it are refused.
	ErrDamaged = errors.New("client: journal damaged")
	// ErrDiskFull: the disk holding the log is full; writes are refused
	// until space is freed.
	ErrDiskFull = errors.New("client: disk full")
)

var sentinels = map[string]error{
	CodeInvalidField: ErrInvalidField, CodeUnauthorized: ErrUnauthorized, CodeForbidden: ErrForbidden,
	CodeNotFound: ErrNotFound, CodeMethodNotAllowed: ErrMethodNotAllowed, CodeConflict: ErrConflict,
	CodeTooLarge: ErrTooLarge, CodeTimeout: ErrTimeout, CodeUnavailable: ErrUnavailable,
	CodeInternal: ErrInternal, CodeDamaged: ErrDamaged, CodeDiskFull: ErrDiskFull,
}

// Error is an error answer of the daemon: the detail of the API's one
// error shape (wire.ErrorDetail) with the HTTP status it came with, as an
// error that errors.Is matches against the sentinel of its code.
type Error struct {
	// Status is the HTTP status; 0 for an error inside a stream that had
	// answered 200 (a rebuild that failed).
	Status   int
	Code     string
	Message  string
	Field    string
	Accepted []string
	// Imported is, when a fork or a resume is refused because the
	// execution's journal was imported from a file, the command and
	// directory it would run (restated in the request's ConfirmImported to
	// run them).
	Imported *wire.ImportedCommand
}

// errorOf is the *Error of an answer's error detail.
func errorOf(status int, d wire.ErrorDetail) *Error {
	return &Error{Status: status, Code: d.Code, Message: d.Message, Field: d.Field, Accepted: d.Accepted, Imported: d.Imported}
}

// Error prints "code: message", with the field and the accepted values
// unless the message names them already.
func (e *Error) Error() string {
	msg := e.Code + ": " + e.Message
	if e.Field != "" && !strings.Contains(e.Message, strconv.Quote(e.Field)) {
		msg = fmt.Sprintf("%s: field %q: %s", e.Code, e.Field, e.Message)
	}
	if len(e.Accepted) > 0 {
		list := strings.Join(e.Accepted, ", ")
		if !strings.Contains(e.Message, list) {
			msg += " (want one of: " + list + ")"
		}
	}
	return msg
}

// Is matches the sentinel of e's code.
func (e *Error) Is(target error) bool {
	s, ok := sentinels[e.Code]
	return ok && s == target
}

// HasCode reports whether err is, or wraps, an *Error with the code; for
// a code without a sentinel, a newer daemon's.
func HasCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
