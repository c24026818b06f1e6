package eventstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/internal/oneof"
)

var (
	// ErrInvalidRecord reports a record that fails strict validation.
	ErrInvalidRecord = errors.New("eventstore: invalid record")
	// ErrRecordTooLarge reports an encoded record above the store's limit.
	ErrRecordTooLarge = errors.New("eventstore: record too large")
	// ErrJournalNotFound reports a journal that has no header yet.
	ErrJournalNotFound = errors.New("eventstore: journal not found")
	// ErrJournalExists reports a header appended to a journal that already
	// has a different one.
	ErrJournalExists = errors.New("eventstore: journal exists")
	// ErrConflict reports an append that kept losing the race for the next
	// sequence of a journal.
	ErrConflict = errors.New("eventstore: sequence conflict")
	// ErrReferenceMismatch reports a record whose ids disagree with the
	// journal reference it is appended to.
	ErrReferenceMismatch = errors.New("eventstore: record disagrees with journal reference")
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("eventstore: store closed")
	// ErrGap reports a journal whose stored sequence skips numbers: records
	// were lost from the log (a damaged or truncated file). See GapError.
	ErrGap = errors.New("eventstore: records missing from a journal")
	// ErrDamaged reports a write refused because the journal is known to
	// have lost records (JetStreamConfig.Refuse): its next record would
	// take the sequence of a lost one, or build on a state that misses it.
	ErrDamaged = errors.New("eventstore: journal damaged")
	// ErrDiskFull reports a write refused because the disk that holds the
	// log, or the log's storage limit, is full. Nothing stored is lost, and
	// writes are taken again once there is space. See IsDiskFull.
	ErrDiskFull = errors.New("eventstore: disk full")
	// ErrNoText reports a message whose payload carries no text: null, or
	// an object without "text". See MessageAccepted.Text.
	ErrNoText = errors.New("eventstore: message payload has no text")
)

// JetStream's answers to a write the server has no room for.
const (
	// jsErrAccountResourcesExceeded: the account's storage limit, which
	// an embedded server's disk guard keeps at the free space above its
	// reserve.
	jsErrAccountResourcesExceeded jetstream.ErrorCode = 10002
	// jsErrInsufficientResources: the server's own storage limit.
	jsErrInsufficientResources jetstream.ErrorCode = 10023
	// jsErrStorageResourcesExceeded: no room to reserve for a stream.
	jsErrStorageResourcesExceeded jetstream.ErrorCode = 10047
	// jsErrStoreFailed: a write failed in the store; a full disk only when
	// its description says so.
	jsErrStoreFailed jetstream.ErrorCode = 10077
)

// IsDiskFull reports whether err is a write refused for want of space, the
// one place where the ways a store says so are recognised: ErrDiskFull,
// JetStream's storage-limit answers, and a file write that met a full disk or
// an exhausted quota (ENOSPC, EDQUOT, as bbolt returns them).
func IsDiskFull(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrDiskFull) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrAccountResourcesExceeded, jsErrInsufficientResources, jsErrStorageResourcesExceeded:
			return true
		case jsErrStoreFailed:
			return strings.Contains(apiErr.Description, "no space left") || strings.Contains(apiErr.Description, "quota exceeded")
		}
	}
	return false
}

// GapError names the journal and the sequences missing from it. Reads stop
// at a gap instead of handing on a journal with a hole in it.
type GapError struct {
	Journal          string
	AgentExecutionID string
	// From and To are the first and the last missing sequence.
	From, To uint64
}

func (e *GapError) Error() string {
	missing := fmt.Sprintf("sequence %d", e.From)
	if e.To > e.From {
		missing = fmt.Sprintf("sequences %d to %d", e.From, e.To)
	}
	return fmt.Sprintf("journal %s (execution %s) lacks %s: records were lost from the log; restore the journal from an export, or see docs/architecture.md on damage", e.Journal, e.AgentExecutionID, missing)
}

// Is makes a *GapError match ErrGap.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// FieldError is one problem with one field of a record.
type FieldError struct {
	// Field is the JSON path of the field, e.g. "signal.payload.summary".
	Field string
	// Problem says what is wrong, e.g. "required" or `"x" is not accepted`.
	Problem string
	// Accepted lists the accepted values or fields, when there is a fixed set.
	Accepted []string
}

func (e FieldError) String() string {
	s := fmt.Sprintf("field %q: %s", e.Field, e.Problem)
	if len(e.Accepted) > 0 {
		s += " (want one of: " + strings.Join(e.Accepted, ", ") + ")"
	}
	return s
}

// ValidationError lists every problem found in one record.
type ValidationError struct {
	// Kind is the record kind, or "" when the kind itself is the problem.
	Kind     Kind
	Problems []FieldError
}

func (e *ValidationError) Error() string {
	what := "record"
	if e.Kind != "" {
		what = string(e.Kind) + " record"
	}
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "invalid " + what + ": " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalidRecord) hold.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidRecord }

// ConflictError reports an append that could not win the journal's next
// sequence after retrying.
type ConflictError struct {
	JournalID string
	Expected  uint64 // the journal sequence the append expected to follow
	Attempts  int
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("append to journal %s: lost the race for sequence %d after %d attempts", e.JournalID, e.Expected+1, e.Attempts)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// problems collects field errors while a record is validated, so a caller
// sees every problem at once.
type problems struct {
	list []FieldError
}

func (p *problems) add(field, problem string, accepted ...string) {
	p.list = append(p.list, FieldError{Field: field, Problem: problem, Accepted: accepted})
}

func (p *problems) required(field string, present bool) {
	if !present {
		p.add(field, "required")
	}
}

func (p *problems) id(field, v string) {
	switch {
	case v == "":
		p.add(field, "required")
	case len(v) > MaxIDLength:
		p.add(field, fmt.Sprintf("%d bytes (want at most %d)", len(v), MaxIDLength))
	default:
		// An id that is not UTF-8 would be altered on its way into JSON.
		if u := utf8Problem(v); u != "" {
			p.add(field, u)
		}
	}
}

func (p *problems) optionalID(field, v string) {
	if v != "" {
		p.id(field, v)
	}
}

func (p *problems) nonNegative(field string, v *int64) {
	if v != nil && *v < 0 {
		p.add(field, fmt.Sprintf("%d is negative (want 0 or more)", *v))
	}
}

func (p *problems) err(kind Kind) error {
	if len(p.list) == 0 {
		return nil
	}
	return &ValidationError{Kind: kind, Problems: p.list}
}

// enum checks a required enumeration value.
func enum[T ~string](p *problems, field string, v T, accepted []T) {
	if v == "" {
		p.add(field, "required", oneof.Strings(accepted)...)
		return
	}
	optEnum(p, field, v, accepted)
}

// optEnum checks an enumeration value that may be absent.
func optEnum[T ~string](p *problems, field string, v T, accepted []T) {
	if v != "" && !slices.Contains(accepted, v) {
		p.add(field, fmt.Sprintf("%q is not accepted", string(v)), oneof.Strings(accepted)...)
	}
}

// OffsetError is a log record that could not be decoded, with its offset,
// so a reader of the log can report it and go on after it.
type OffsetError struct {
	Offset uint64
	Err    error
}

func (e *OffsetError) Error() string { return fmt.Sprintf("record at offset %d: %v", e.Offset, e.Err) }

func (e *OffsetError) Unwrap() error { return e.Err }
