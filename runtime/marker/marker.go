package marker

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
)

// Prefix starts every marker line, at the very start of the line.
const Prefix = "@@agentjournal "

// NonceEnv is the environment variable that carries the launch's nonce to
// the agent.
const NonceEnv = "AGENTJOURNAL_MARKER_NONCE"

// NonceLength is the length of a nonce: 16 random bytes in lower-case hex.
const NonceLength = 32

// MaxLineBytes bounds a marker line, the trailing line break excluded. A
// longer marker is Malformed without being read.
const MaxLineBytes = 1 << 20

// BadMarkerCode is the code of the diagnostic signal recorded for a
// malformed marker. It is persisted: never rename it.
const BadMarkerCode = "bad-marker"

// maxRawBytes bounds the rawText of the evidence recorded for a marker that
// was not accepted; maxMessageBytes bounds the diagnostic's message.
const (
	maxRawBytes     = 4 << 10
	maxMessageBytes = 1 << 10
)

var (
	// ErrMalformed is wrapped by every error of a Malformed result.
	ErrMalformed = errors.New("marker: malformed")
	// ErrNonce reports a nonce that is not 32 lower-case hex characters.
	ErrNonce = errors.New("marker: invalid nonce")
)

// Result is what Parse found in a line.
type Result int

const (
	// NotMarker: the line does not start with Prefix. It is ordinary output.
	NotMarker Result = iota
	// Signal: a well-formed marker with the launch's nonce carrying a valid,
	// surfaced signal.
	Signal
	// WrongNonce: a marker without the launch's nonce (another nonce, none,
	// or no nonce expected). It is evidence only and carries no signal,
	// whatever follows the nonce.
	WrongNonce
	// Malformed: a marker with the launch's nonce whose signal cannot be
	// accepted (bad JSON, unknown or unsurfaced type, unknown field, invalid
	// payload), or any marker line longer than MaxLineBytes.
	Malformed
)

func (r Result) String() string {
	switch r {
	case NotMarker:
		return "not-marker"
	case Signal:
		return "signal"
	case WrongNonce:
		return "wrong-nonce"
	case Malformed:
		return "malformed"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Parsed is the outcome of Parse. Signal is set only when Result is Signal;
// Err only when Result is Malformed.
type Parsed struct {
	Result Result
	Signal *eventstore.Signal
	Err    error
}

// NewNonce returns a fresh nonce for one launch: 16 bytes from crypto/rand
// as 32 lower-case hex characters.
func NewNonce() (string, error) {
	var b [NonceLength / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("marker nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidNonce reports whether s has the form of a nonce.
func ValidNonce(s string) bool {
	if len(s) != NonceLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Parse reads one line of agent output. The line may end with "\n"; one
// "\r" before it is removed as well. nonce is the launch's nonce; when it is
// not a valid nonce, no marker is accepted (every marker is WrongNonce).
// The nonce is compared in constant time. Parse does not retain line.
func Parse(line []byte, nonce string) Parsed {
	line = trimEOL(line)
	if !bytes.HasPrefix(line, []byte(Prefix)) {
		return Parsed{Result: NotMarker}
	}
	if len(line) > MaxLineBytes {
		return malformed(fmt.Errorf("%w: line is %d bytes (the limit is %d)", ErrMalformed, len(line), MaxLineBytes))
	}
	rest := line[len(Prefix):]
	token, body, found := bytes.Cut(rest, []byte(" "))
	if !ValidNonce(nonce) || len(token) != NonceLength || subtle.ConstantTimeCompare(token, []byte(nonce)) != 1 {
		return Parsed{Result: WrongNonce}
	}
	if !found {
		return malformed(fmt.Errorf("%w: no signal after the nonce", ErrMalformed))
	}
	s, err := decode(body)
	if err != nil {
		return malformed(err)
	}
	return Parsed{Result: Signal, Signal: s}
}

func malformed(err error) Parsed { return Parsed{Result: Malformed, Err: err} }

// decode reads the signal JSON strictly, through the eventstore signal
// registry, and accepts only surfaced signal types with a valid payload.
func decode(body []byte) (*eventstore.Signal, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%w: no signal after the nonce", ErrMalformed)
	}
	var s eventstore.Signal
	if err := s.UnmarshalJSON(body); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if err := check(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// check accepts a surfaced signal with a valid payload.
func check(s *eventstore.Signal) error {
	spec, ok := eventstore.LookupSignal(s.Type)
	if !ok || !spec.Surfaced {
		return fmt.Errorf("%w: signal type %q is not accepted from agents (want one of: %s)",
			ErrMalformed, s.Type, joinTypes(eventstore.SurfacedSignalTypes()))
	}
	if s.Payload == nil || s.Payload.SignalType() != s.Type {
		return fmt.Errorf("%w: signal %q has no %s payload", ErrMalformed, s.Type, s.Type)
	}
	// The signal registry validates payloads as part of a record: check a
	// probe observation whose other fields are all valid, so every problem
	// reported is the signal's.
	probe := *probeObservation
	probe.Signal = s
	if err := eventstore.Validate(&probe); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

var probeObservation = func() *eventstore.Observation {
	ref, err := eventstore.NewReference(eventstore.OwnerSystem, "marker", "marker-probe")
	if err != nil {
		panic(err)
	}
	return &eventstore.Observation{
		Base: eventstore.Base{
			RecordID: "probe", Sequence: 2, Type: eventstore.KindObservation, SchemaVersion: eventstore.SchemaVersion,
			JournalID: ref.JournalID, AgentExecutionID: ref.AgentExecutionID, OwnerID: ref.OwnerID, Scope: ref.OwnerEntity,
			OccurredAt: time.Unix(0, 0),
		},
		ObservationID: "probe", Source: eventstore.ObservedPTY, Confidence: eventstore.ConfidenceAuthoritative,
	}
}()

// Observation turns a parsed marker into the observation the runtime
// records, or nil for NotMarker. Markers are recorded with the source of the
// lane the line came from (eventstore.ObservedPTY for a PTY lane,
// eventstore.ObservedProviderOutput for a structured stdout lane), which the
// caller passes; the base fields are left for the appender.
//
//   - Signal: confidence authoritative, the signal, no raw text.
//   - WrongNonce: evidence only: confidence low, the line (clipped) as raw
//     text, no signal.
//   - Malformed: a diagnostic signal (code bad-marker, the error as
//     message), confidence diagnostic, the line (clipped, its nonce
//     redacted) as raw text.
func Observation(p Parsed, line []byte, observationID string, source eventstore.ObservationSource) *eventstore.Observation {
	o := &eventstore.Observation{ObservationID: observationID, Source: source}
	switch p.Result {
	case Signal:
		if p.Signal == nil {
			return nil
		}
		o.Confidence = eventstore.ConfidenceAuthoritative
		o.Signal = p.Signal
	case WrongNonce:
		o.Confidence = eventstore.ConfidenceLow
		o.RawText = rawText(line, false)
	case Malformed:
		msg := "malformed marker"
		if p.Err != nil {
			msg = p.Err.Error()
		}
		o.Confidence = eventstore.ConfidenceDiagnostic
		o.Signal = eventstore.NewSignal(&eventstore.DiagnosticSignal{Code: BadMarkerCode, Message: textclip.Fit(msg, maxMessageBytes)})
		o.RawText = rawText(line, true)
	default:
		return nil
	}
	return o
}

// rawText is the clipped line as evidence. A malformed marker carried the
// launch's nonce (or may have: an oversize line is refused unread), so the
// nonce field, and any repetition of it in the line, is redacted: the
// journal does not hold a nonce that still works.
func rawText(line []byte, redact bool) string {
	line = trimEOL(line)
	if len(line) > maxRawBytes+len(Prefix)+NonceLength {
		line = line[:maxRawBytes+len(Prefix)+NonceLength]
	}
	s := string(line)
	if rest, ok := strings.CutPrefix(s, Prefix); ok && redact {
		token, _, _ := strings.Cut(rest, " ")
		if token != "" {
			rest = strings.ReplaceAll(rest, token, "<nonce>")
			// The cut above may have split a repetition: drop its head.
			for k := len(token) - 1; k > 0; k-- {
				if strings.HasSuffix(rest, token[:k]) {
					rest = rest[:len(rest)-k]
					break
				}
			}
			s = Prefix + rest
		}
	}
	return textclip.Fit(s, maxRawBytes)
}

// Format returns the marker line, newline included, that carries s for the
// launch with this nonce. It refuses what Parse would not accept: a nonce
// that is not valid, a signal type that is not surfaced, an invalid payload,
// a line over MaxLineBytes.
func Format(nonce string, s *eventstore.Signal) ([]byte, error) {
	if !ValidNonce(nonce) {
		return nil, fmt.Errorf("%w: want %d lower-case hex characters", ErrNonce, NonceLength)
	}
	if s == nil {
		return nil, fmt.Errorf("%w: no signal", ErrMalformed)
	}
	if err := check(s); err != nil {
		return nil, err
	}
	body, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("marshal %s signal: %w", s.Type, err)
	}
	line := make([]byte, 0, len(Prefix)+NonceLength+1+len(body)+1)
	line = append(line, Prefix...)
	line = append(line, nonce...)
	line = append(line, ' ')
	line = append(line, body...)
	if len(line) > MaxLineBytes {
		return nil, fmt.Errorf("%w: line is %d bytes (the limit is %d)", ErrMalformed, len(line), MaxLineBytes)
	}
	return append(line, '\n'), nil
}

func trimEOL(line []byte) []byte {
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r"))
}

func joinTypes(ts []eventstore.SignalType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}
