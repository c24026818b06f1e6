package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentjournal/agentjournal/runtime"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/terminal"
)

// apiError is an error with its HTTP answer.
type apiError struct {
	status   int
	code     string
	message  string
	field    string
	accepted []string
	imported *wire.ImportedCommand
}

func (e *apiError) Error() string { return e.message }

func invalidField(field string, accepted []string, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidField, field: field, accepted: accepted,
		message: withAccepted(fmt.Sprintf(format, args...), accepted)}
}

func notFound(format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, code: wire.CodeNotFound, message: fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *apiError {
	return &apiError{status: http.StatusConflict, code: wire.CodeConflict, message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{status: http.StatusForbidden, code: wire.CodeForbidden, message: fmt.Sprintf(format, args...)}
}

func timeout(format string, args ...any) *apiError {
	return &apiError{status: http.StatusGatewayTimeout, code: wire.CodeTimeout, message: fmt.Sprintf(format, args...)}
}

func unavailable(format string, args ...any) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, code: wire.CodeUnavailable, message: fmt.Sprintf(format, args...)}
}

func withAccepted(msg string, accepted []string) string {
	if len(accepted) == 0 {
		return msg
	}
	return msg + " (want one of: " + strings.Join(accepted, ", ") + ")"
}

// toAPIError maps an error to its answer. Errors of the packages below
// become the matching client error; anything else is internal.
func toAPIError(err error) *apiError {
	var ae *apiError
	var tooBig *http.MaxBytesError
	var ve *eventstore.ValidationError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooBig):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: wire.CodeTooLarge,
			message: fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit)}
	case errors.As(err, &ve) && len(ve.Problems) > 0:
		return validationError(ve)
	case errors.Is(err, eventstore.ErrUnavailable):
		return unavailable("the log did not answer: %v; retry later", err)
	case errors.Is(err, eventstore.ErrDamaged):
		return damagedError(err)
	case errors.Is(err, eventstore.ErrGap):
		// The data is damaged, not the request: say which journal lacks
		// what, so an operator can restore it.
		return &apiError{status: http.StatusInternalServerError, code: wire.CodeDamaged, message: err.Error()}
	case eventstore.IsDiskFull(err):
		return diskFull(DiskSpace{}, false)
	case errors.Is(err, eventstore.ErrRecordTooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: wire.CodeTooLarge, message: err.Error()}
	case errors.Is(err, runtime.ErrUnknownMessageType):
		return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidField, field: "type", message: err.Error()}
	case errors.Is(err, runtime.ErrBadMessage):
		return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidField, field: "payload", message: err.Error()}
	case errors.Is(err, runtime.ErrNotRunning):
		return conflict("%v", err)
	case errors.Is(err, eventstore.ErrJournalNotFound), errors.Is(err, projections.ErrNotFound), errors.Is(err, terminal.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: wire.CodeNotFound, message: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return timeout("the request took too long: %v", err)
	}
	return &apiError{status: http.StatusInternalServerError, code: wire.CodeInternal,
		message: "internal error (the daemon log has the details)"}
}

// diskFull is the answer to a write refused for want of space, saying where,
// how much, and what to do; d is the daemon's last measurement of the disk,
// when known is true.
func diskFull(d DiskSpace, known bool) *apiError {
	var msg string
	switch {
	case known && d.Full:
		msg = fmt.Sprintf("the disk holding the data directory %s is full: %s free, and the log takes writes only while more than %s is free (a reserve for the read models and the log's own index); free at least %s on that disk, or move the data directory to a larger one",
			d.Dir, formatBytes(d.Free), formatBytes(d.Reserve), formatBytes(d.Reserve-d.Free+1))
	case known:
		msg = fmt.Sprintf("the disk holding the data directory %s has no room for this write: %s free, of which the log keeps %s in reserve; free space on that disk, or move the data directory to a larger one",
			d.Dir, formatBytes(d.Free), formatBytes(d.Reserve))
	default:
		msg = "the log's storage is full (the disk holding its data, or the storage limit of the NATS server that holds it); free space there, or raise that server's max_file_store"
	}
	return &apiError{status: http.StatusInsufficientStorage, code: wire.CodeDiskFull,
		message: msg + ". Nothing stored was lost; writes resume by themselves once there is room, no restart needed, and reads are served meanwhile"}
}

// formatBytes writes a size as people read it: 512 B, 6.4 MiB, 3.0 GiB.
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}

// answer is toAPIError with what only the server knows: the disk's free
// space in a disk_full answer. A write that failed in another way while the
// disk is full (one that met the full disk itself and got no answer from the
// log) is answered as disk_full too: that is its cause.
func (s *Server) answer(r *http.Request, err error) *apiError {
	ae := toAPIError(err)
	if s.cfg.DiskSpace == nil {
		return ae
	}
	d, known := s.cfg.DiskSpace()
	switch {
	case ae.code == wire.CodeDiskFull:
		return diskFull(d, known)
	case known && d.Full && r.Method != http.MethodGet &&
		(ae.code == wire.CodeInternal || ae.code == wire.CodeTimeout || ae.code == wire.CodeUnavailable):
		return diskFull(d, known)
	}
	return ae
}

// validationError names the first field at fault and what it accepts; the
// message lists every problem.
func validationError(ve *eventstore.ValidationError) *apiError {
	parts := make([]string, len(ve.Problems))
	for i, p := range ve.Problems {
		parts[i] = p.String()
	}
	first := ve.Problems[0]
	return &apiError{status: http.StatusBadRequest, code: wire.CodeInvalidField, field: first.Field, accepted: first.Accepted,
		message: strings.Join(parts, "; ")}
}

// Bounds of what a request puts into an answer or a log line: a path, an
// id or a key can be as long as the body or the URL allows.
const (
	// maxFieldLen bounds a name or an id echoed in an error.
	maxFieldLen = 128
	// maxLogValue bounds a route or an error in a log line.
	maxLogValue = 512
)

// clip returns s cut to at most n bytes on a UTF-8 boundary, saying how
// long it was when it is cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s%s(%d bytes)", textclip.Prefix(s, n), textclip.Ellipsis, len(s))
}

// writeError answers with err in the API's error shape. Internal errors are
// logged here, once, clipped: a request must not be able to write much to
// the daemon log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := s.answer(r, err)
	if ae.code == wire.CodeInternal && r.Context().Err() == nil {
		s.log.Error("request failed", logKeyRoute, clip(r.Method+" "+r.URL.Path, maxLogValue), logKeyErr, clip(err.Error(), maxLogValue))
	}
	if ae.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentjournal"`)
	}
	writeJSON(w, ae.status, wire.ErrorBody{Error: wire.ErrorDetail{Code: ae.code, Message: ae.message, Field: ae.field, Accepted: ae.accepted, Imported: ae.imported}})
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	setContentType(w, "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client is gone if this fails
}

// readByID answers a route that reads one thing by the {id} of its path
// and takes no query parameter with what read finds for that id.
func readByID[T any](w http.ResponseWriter, r *http.Request, read func(ctx context.Context, id string) (T, error)) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	v, err := read(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// setContentType sets the headers of an answer that is not a stream: its
// content type, which a browser is not to second-guess, and that no cache
// keeps it.
func setContentType(w http.ResponseWriter, contentType string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// orEmpty is s, or an empty list where s is nil: a list in an answer is
// written as [], never null, as openapi.yaml has it.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
