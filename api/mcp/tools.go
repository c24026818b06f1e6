package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentjournal/agentjournal/eventstore"
)

// ToolPrefix starts the name of every signal tool: signal_<signal type>.
// Tool names are what agents are told to call: never rename one.
const ToolPrefix = "signal_"

// MetaCallID is the _meta key of a tool call under which a client may
// supply its own id for the call (1 to eventstore.MaxIDLength bytes). A
// call retried with the same id records the signal once: the retry gets
// the first call's decision back, marked duplicate.
const MetaCallID = "agentjournal/callId"

// Log attribute keys.
const (
	logKeyExecution   = "execution"
	logKeyTool        = "tool"
	logKeyObservation = "observation"
	logKeyErr         = "err"
	logKeyRemote      = "remote"
)

// Recorder records observations into an execution's journal.
type Recorder interface {
	// RecordObservation records o for the execution and returns the
	// policy's decision when it arrives (action, reason) or an error. The
	// base fields of o are left for the recorder to fill.
	RecordObservation(ctx context.Context, agentExecutionID string, o *eventstore.Observation) (Decision, error)
}

// Decision is the policy's answer to a recorded observation.
type Decision struct {
	DecisionID string `json:"decisionId"`
	Action     string `json:"action"`
	Reason     string `json:"reason,omitempty"`
	// Duplicate is true when the observation had been recorded before and
	// the decision is the one taken then.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Result is the structured content of a successful tool call.
type Result struct {
	ObservationID string   `json:"observationId"`
	Decision      Decision `json:"decision"`
}

// Tools lists the tool names, one per surfaced signal type, in the signal
// registry's order.
func Tools() []string {
	var out []string
	for _, t := range eventstore.SurfacedSignalTypes() {
		out = append(out, ToolName(t))
	}
	return out
}

// ToolName is the name of the tool that carries signal type t.
func ToolName(t eventstore.SignalType) string { return ToolPrefix + string(t) }

// implementation names the server to clients.
var implementation = &sdk.Implementation{Name: "agentjournal", Title: "agentjournal agent signals", Version: "1"}

const instructions = "Report your work to agentjournal by calling one signal_* tool per signal: " +
	"progress and status as you go, needs_input to ask the operator a question, blocked when you cannot continue, " +
	"ready_for_verification, completed_claim or failed_claim when the task ends, message for operator-visible text, " +
	"plan for your todo list, checkpoint to mark a point the work can be resumed from. " +
	"Each call answers with the id of the recorded observation and the decision taken on it."

// signalTools serves the signal tools for executions whose id the transport
// supplies with each call.
type signalTools struct {
	rec    Recorder
	logger *slog.Logger
	// instance names this set of tools in derived observation ids, so that
	// the ids of two daemon runs never meet; calls counts the calls made.
	instance string
	calls    atomic.Uint64
}

func newSignalTools(rec Recorder, logger *slog.Logger) *signalTools {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("mcp: read random instance id: %v", err))
	}
	return &signalTools{rec: rec, logger: logger, instance: hex.EncodeToString(b[:])}
}

// server returns an MCP server offering one tool per surfaced signal type.
func (st *signalTools) server() *sdk.Server {
	s := sdk.NewServer(implementation, &sdk.ServerOptions{Instructions: instructions})
	for _, t := range eventstore.SurfacedSignalTypes() {
		tool, err := toolFor(t)
		if err != nil {
			// The registry's schemas are generated from Go types: a schema the
			// SDK cannot read is a bug in this build.
			panic(err)
		}
		s.AddTool(tool, st.handler(t))
	}
	return s
}

// toolFor describes the tool of one signal type from the signal registry.
func toolFor(t eventstore.SignalType) (*sdk.Tool, error) {
	spec, ok := eventstore.LookupSignal(t)
	if !ok {
		return nil, fmt.Errorf("mcp: signal type %q is not registered", t)
	}
	b, err := json.Marshal(spec.Schema())
	if err != nil {
		return nil, fmt.Errorf("mcp: marshal the %s payload schema: %w", t, err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(b, &schema); err != nil {
		return nil, fmt.Errorf("mcp: read the %s payload schema: %w", t, err)
	}
	return &sdk.Tool{Name: ToolName(t), Description: spec.Description, InputSchema: &schema}, nil
}

func (st *signalTools) handler(t eventstore.SignalType) sdk.ToolHandler {
	tool := ToolName(t)
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		execID, ok := executionOf(req)
		if !ok {
			// The HTTP handler refuses unauthenticated requests before they
			// reach a tool; getting here is a wiring bug, not a bad call.
			return nil, errors.New("mcp: the call carries no execution")
		}
		sig, err := decodeSignal(t, req.Params.Arguments)
		if err != nil {
			return toolError(err.Error()), nil
		}
		id, err := st.observationID(execID, tool, req, sig)
		if err != nil {
			return toolError(tool + ": " + err.Error()), nil
		}
		o := &eventstore.Observation{
			ObservationID: id, Source: eventstore.ObservedMCP,
			Confidence: eventstore.ConfidenceAuthoritative, Signal: sig,
		}
		d, err := st.rec.RecordObservation(ctx, execID, o)
		if err != nil {
			st.logger.Error("record a signal sent through MCP", logKeyExecution, execID, logKeyTool, tool,
				logKeyObservation, id, logKeyErr, err)
			return toolError(fmt.Sprintf("%s: the signal was not recorded: %v", tool, err)), nil
		}
		return success(id, d), nil
	}
}

// observationID derives the observation id of a call: from the client's
// call id when it supplied one (see MetaCallID), so that a retried call is
// recognized; otherwise from the execution, the tool, the canonical
// arguments, the session (or this tool set's instance when the transport
// keeps no session) and the number of the call.
func (st *signalTools) observationID(execID, tool string, req *sdk.CallToolRequest, sig *eventstore.Signal) (string, error) {
	if v, ok := req.Params.Meta[MetaCallID]; ok {
		callID, isString := v.(string)
		if !isString || callID == "" || len(callID) > eventstore.MaxIDLength {
			return "", fmt.Errorf("_meta %q: want a string of 1 to %d bytes", MetaCallID, eventstore.MaxIDLength)
		}
		return hashID("call", execID, tool, callID), nil
	}
	args, err := json.Marshal(sig.Payload)
	if err != nil {
		return "", fmt.Errorf("encode the arguments: %w", err)
	}
	session := st.instance
	if req.Session != nil && req.Session.ID() != "" {
		session = "session:" + req.Session.ID()
	}
	n := st.calls.Add(1)
	return hashID("derived", execID, tool, string(args), session, strconv.FormatUint(n, 10)), nil
}

// hashID is "mcp-" and 32 hex digits of a hash of the length-prefixed parts.
func hashID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return "mcp-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// argumentsError reports tool arguments that do not make a valid signal
// payload. Its message names each field and what the tool accepts.
type argumentsError struct {
	Type     eventstore.SignalType
	Problems []eventstore.FieldError
	// Accepted lists the tool's arguments, required ones marked.
	Accepted []string
}

func (e *argumentsError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("invalid arguments for %s: %s; accepted arguments: %s",
		ToolName(e.Type), strings.Join(parts, "; "), strings.Join(e.Accepted, ", "))
}

// decodeSignal decodes tool arguments strictly into the payload of signal
// type t, through the signal registry, and validates it.
func decodeSignal(t eventstore.SignalType, args json.RawMessage) (*eventstore.Signal, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	if args[0] != '{' {
		return nil, argumentError(t, []eventstore.FieldError{{Field: "(arguments)", Problem: "want a JSON object"}})
	}
	wire, err := json.Marshal(struct {
		Type    eventstore.SignalType `json:"type"`
		Payload json.RawMessage       `json:"payload"`
	}{t, args})
	if err != nil {
		return nil, argumentError(t, []eventstore.FieldError{{Field: "(arguments)", Problem: err.Error()}})
	}
	var sig eventstore.Signal
	if err := json.Unmarshal(wire, &sig); err != nil {
		return nil, signalError(t, args, err)
	}
	probe := probeObservation(&sig)
	if err := eventstore.Validate(probe); err != nil {
		return nil, signalError(t, args, err)
	}
	return &sig, nil
}

// signalError turns an error of the signal registry into an argumentsError
// whose fields are named as the tool's arguments.
func signalError(t eventstore.SignalType, args json.RawMessage, err error) error {
	var ve *eventstore.ValidationError
	if !errors.As(err, &ve) {
		return argumentError(t, []eventstore.FieldError{{Field: "(arguments)", Problem: err.Error()}})
	}
	problems := make([]eventstore.FieldError, 0, len(ve.Problems))
	for _, p := range ve.Problems {
		switch {
		case p.Field == "signal.payload":
			p.Field = "(arguments)"
		case strings.HasPrefix(p.Field, "signal.payload."):
			p.Field = strings.TrimPrefix(p.Field, "signal.payload.")
		}
		if p.Problem == "unknown field" {
			// The decoder names an unknown field but not where it is: find
			// it, nested ones included, with the fields accepted there.
			spec, _ := eventstore.LookupSignal(t)
			var v any
			if json.Unmarshal(args, &v) == nil {
				if path, accepted, ok := unknownField(spec.Schema(), v, ""); ok {
					p.Field, p.Accepted = path, accepted
				}
			}
		}
		problems = append(problems, p)
	}
	return argumentError(t, problems)
}

// unknownField finds the first member of v, in key order and depth first,
// that the JSON Schema sc does not declare, and the members declared there.
func unknownField(sc map[string]any, v any, path string) (string, []string, bool) {
	switch v := v.(type) {
	case map[string]any:
		props, ok := sc["properties"].(map[string]any)
		if !ok {
			return "", nil, false
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			psc, known := props[k].(map[string]any)
			if !known {
				return sub, slices.Sorted(maps.Keys(props)), true
			}
			if p, acc, ok := unknownField(psc, v[k], sub); ok {
				return p, acc, true
			}
		}
	case []any:
		items, ok := sc["items"].(map[string]any)
		if !ok {
			return "", nil, false
		}
		for i, it := range v {
			if p, acc, ok := unknownField(items, it, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, acc, true
			}
		}
	}
	return "", nil, false
}

func argumentError(t eventstore.SignalType, problems []eventstore.FieldError) error {
	return &argumentsError{Type: t, Problems: problems, Accepted: acceptedArguments(t)}
}

// acceptedArguments lists the top-level arguments of a signal's schema,
// required ones first and marked.
func acceptedArguments(t eventstore.SignalType) []string {
	spec, _ := eventstore.LookupSignal(t)
	sc := spec.Schema()
	props, _ := sc["properties"].(map[string]any)
	required, _ := sc["required"].([]string)
	var optional []string
	for name := range props {
		if !slices.Contains(required, name) {
			optional = append(optional, name)
		}
	}
	slices.Sort(optional)
	out := make([]string, 0, len(props))
	for _, name := range required {
		out = append(out, name+" (required)")
	}
	return append(out, optional...)
}

// probeObservation wraps a signal in an observation whose other fields are
// all valid, so that validating it reports only the signal's problems.
func probeObservation(sig *eventstore.Signal) *eventstore.Observation {
	const execID, ownerID = "mcp-probe", "mcp"
	return &eventstore.Observation{
		Base: eventstore.Base{
			RecordID: "probe", Sequence: 2, Type: eventstore.KindObservation, SchemaVersion: eventstore.SchemaVersion,
			JournalID: eventstore.JournalIDFor(eventstore.OwnerSystem, ownerID, execID), AgentExecutionID: execID,
			OwnerID: ownerID, Scope: eventstore.OwnerSystem, OccurredAt: time.Unix(0, 0),
		},
		ObservationID: "probe", Source: eventstore.ObservedMCP, Confidence: eventstore.ConfidenceAuthoritative, Signal: sig,
	}
}

func success(id string, d Decision) *sdk.CallToolResult {
	text := fmt.Sprintf("recorded observation %s: decision %s", id, d.Action)
	if d.Duplicate {
		text = fmt.Sprintf("observation %s was recorded before: decision %s", id, d.Action)
	}
	if d.Reason != "" {
		text += " (" + d.Reason + ")"
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: Result{ObservationID: id, Decision: d},
	}
}

func toolError(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, IsError: true}
}
