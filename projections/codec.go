package projections

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// Timeline items and decisions are most of what a projection writes: about
// three items for every four records, and a decision for every observation
// and message. They are stored in a compact binary form rather than JSON,
// which made them 2.5 times smaller (less to write on every commit, less of
// the file mapped) and encoding them about ten times cheaper. States and
// summaries stay JSON: there is one of each per execution.
//
// Both forms start with a format byte that is never '{', then the fields in
// a fixed order:
//
//	item:     itemFormat id at kind record text source signal messageId
//	          messageType observationId requestId choices action lifecycle
//	          attention [reason needs [tool]]
//	tool:     callId name status target durationMs endSequence error
//	          exitCode output outputBytes
//	decision: decisionFormat decisionId action reason sequence
//
// The sequence of an item is its key. A string is a uvarint n followed,
// when n is even, by n/2 bytes, and is otherwise entry n/2 of internTable.
// An id is a byte 1 followed by the 16 bytes of a "rec-" + 32 hex record id,
// or a byte 0 followed by a string. A time is a byte 0 (UTC), 1 (followed by
// its zone offset in seconds, a varint) or 2 (the zero time, nothing else),
// then, unless zero, its Unix seconds (varint) and nanoseconds (uvarint).
// A list is a uvarint count followed by its strings. The fields in brackets
// were added later: they are written only when one is set (or one after
// them is), and an item that ends before them has them empty, so items
// stored before are read as they were. In a tool, a target is a byte 0
// (none) or 1 followed by its kind, path and label; durationMs is a
// uvarint of the milliseconds plus one, 0 for none; an exit code a byte 0
// (none) or 1 followed by a varint; endSequence and outputBytes uvarints.
const (
	itemFormat     = 0x01
	decisionFormat = 0x01
)

// internTable holds the enumerated strings items and decisions carry, each
// stored as its index. The indexes are persisted: only ever append.
var internTable = []string{
	// timeline item kinds
	"message", "delivery", "decision", "state", "owner-effect",
	"progress", "status", "needs-input", "blocked", "claim", "failure", "chat",
	// record kinds
	"journal.header", "message.accepted", "message.delivery", "observation.recorded",
	"decision.recorded", "state.changed", "activity.updated", "owner-effect.recorded",
	"projection.recorded",
	// message and observation sources
	"operator", "daemon", "system", "owner",
	"pty", "mcp", "sdk", "provider-output", "terminal-heuristic", "filesystem", "git",
	// signal types
	"needs_input", "ready_for_verification", "completed_claim", "failed_claim", "usage", "diagnostic",
	// decision actions
	"reject", "record-only", "emit-message", "update-state", "route-owner-effect",
	// lifecycles
	"starting", "running", "completed", "failed", "cancelled", "terminated",
	// attentions
	"none", "autonomous", "awaiting-operator", "awaiting-system",
	// added later: timeline item kinds, signal types
	"plan",
	// added later: the interruption record and its timeline item
	"interruption.recorded", "interruption",
	// added later: workspace snapshot and restore records
	"snapshot.created", "restore.attempted",
	// added later: the runtime contract's checkpoint record and signal
	"checkpoint.created", "checkpoint",
	// added later: tool call items (kind, statuses, target kinds) and the
	// items of snapshots and restores
	"tool", "started", "succeeded", "file", "command", "url", "search", "artifact", "unknown",
	"snapshot", "restore",
}

var internIndex = func() map[string]uint64 {
	m := make(map[string]uint64, len(internTable))
	for i, s := range internTable {
		if _, dup := m[s]; dup {
			panic("projections: " + s + " is in internTable twice")
		}
		m[s] = uint64(i)
		internMax = max(internMax, len(s))
	}
	return m
}()

// internMax is the length of the longest interned string: a longer one,
// such as an item's text, is not looked up, which would hash all of it.
var internMax int

func appendStr(dst []byte, s string) []byte {
	if len(s) <= internMax {
		if i, ok := internIndex[s]; ok {
			return binary.AppendUvarint(dst, i<<1|1)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(s))<<1)
	return append(dst, s...)
}

const (
	recordIDPrefix = "rec-"
	recordIDBytes  = 16
)

// appendID stores a record id of the form the store derives ("rec-" and 32
// lowercase hex digits) as its 16 bytes, and any other id as a string.
func appendID(dst []byte, id string) []byte {
	if len(id) == len(recordIDPrefix)+2*recordIDBytes && id[:len(recordIDPrefix)] == recordIDPrefix && lowerHex(id[len(recordIDPrefix):]) {
		// lowerHex checked every digit, so decoding cannot fail.
		dst, _ = hex.AppendDecode(append(dst, 1), []byte(id[len(recordIDPrefix):]))
		return dst
	}
	return appendStr(append(dst, 0), id)
}

// lowerHex reports whether s is lowercase hex only, the form hex.Encode
// gives back: an uppercase id must not come back lowercased.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func appendTime(dst []byte, t time.Time) []byte {
	switch _, off := t.Zone(); {
	case t.IsZero():
		return append(dst, 2)
	case t.Location() == time.UTC:
		dst = append(dst, 0)
	default:
		dst = binary.AppendVarint(append(dst, 1), int64(off))
	}
	dst = binary.AppendVarint(dst, t.Unix())
	return binary.AppendUvarint(dst, uint64(t.Nanosecond()))
}

// encodeItem appends the stored form of it to dst.
func encodeItem(dst []byte, it *execution.TimelineItem) []byte {
	dst = append(dst, itemFormat)
	dst = appendID(dst, it.ID)
	dst = appendTime(dst, it.At)
	for _, s := range [...]string{string(it.Kind), string(it.Record), it.Text, it.Source, string(it.Signal),
		it.MessageID, it.MessageType, it.ObservationID, it.RequestID} {
		dst = appendStr(dst, s)
	}
	dst = binary.AppendUvarint(dst, uint64(len(it.Choices)))
	for _, c := range it.Choices {
		dst = appendStr(dst, c)
	}
	for _, s := range [...]string{string(it.Action), string(it.Lifecycle), string(it.Attention)} {
		dst = appendStr(dst, s)
	}
	if it.Reason != "" || it.Needs != "" || it.Tool != nil {
		dst = appendStr(appendStr(dst, it.Reason), it.Needs)
	}
	if t := it.Tool; t != nil {
		dst = appendTool(dst, t)
	}
	return dst
}

func appendTool(dst []byte, t *execution.ToolItem) []byte {
	dst = appendStr(appendStr(appendStr(dst, t.CallID), t.Name), string(t.Status))
	if t.Target == nil {
		dst = append(dst, 0)
	} else {
		dst = appendStr(appendStr(appendStr(append(dst, 1), string(t.Target.Kind)), t.Target.Path), t.Target.Label)
	}
	var ms uint64
	if t.DurationMs != nil && *t.DurationMs >= 0 {
		ms = uint64(*t.DurationMs) + 1
	}
	dst = binary.AppendUvarint(dst, ms)
	dst = binary.AppendUvarint(dst, t.EndSequence)
	dst = appendStr(dst, t.Error)
	if t.ExitCode == nil {
		dst = append(dst, 0)
	} else {
		dst = binary.AppendVarint(append(dst, 1), *t.ExitCode)
	}
	dst = appendStr(dst, t.Output)
	return binary.AppendUvarint(dst, uint64(max(t.OutputBytes, 0)))
}

func (r *reader) tool() *execution.ToolItem {
	t := &execution.ToolItem{CallID: r.str(), Name: r.str(), Status: eventstore.ToolCallStatus(r.str())}
	switch r.byte() {
	case 0:
	case 1:
		t.Target = &eventstore.Target{Kind: eventstore.TargetKind(r.str()), Path: r.str(), Label: r.str()}
	default:
		r.fail(errors.New("bad target form"))
	}
	if ms := r.uvarint(); ms > 0 {
		d := int64(ms - 1)
		t.DurationMs = &d
	}
	t.EndSequence = r.uvarint()
	t.Error = r.str()
	switch r.byte() {
	case 0:
	case 1:
		c := r.varint()
		t.ExitCode = &c
	default:
		r.fail(errors.New("bad exit code form"))
	}
	t.Output = r.str()
	t.OutputBytes = int64(r.uvarint())
	return t
}

// encodeDecision appends the stored form of d to dst.
func encodeDecision(dst []byte, d execution.DecisionRef) []byte {
	dst = append(dst, decisionFormat)
	dst = appendStr(dst, d.DecisionID)
	dst = appendStr(dst, string(d.Action))
	dst = appendStr(dst, d.Reason)
	return binary.AppendUvarint(dst, d.Sequence)
}

// errShort reports stored bytes that end inside a field.
var errShort = errors.New("truncated")

// reader decodes one stored value; the first error sticks and every later
// read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail(errShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(errShort)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if n&1 == 1 {
		if n>>1 >= uint64(len(internTable)) {
			r.fail(fmt.Errorf("string %d is not in the table of %d", n>>1, len(internTable)))
			return ""
		}
		return internTable[n>>1]
	}
	n >>= 1
	if n > uint64(len(r.b)) {
		r.fail(errShort)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) id() string {
	switch r.byte() {
	case 0:
		return r.str()
	case 1:
		if len(r.b) < recordIDBytes {
			r.fail(errShort)
			return ""
		}
		id := make([]byte, 0, len(recordIDPrefix)+2*recordIDBytes)
		id = append(id, recordIDPrefix...)
		id = hex.AppendEncode(id, r.b[:recordIDBytes])
		r.b = r.b[recordIDBytes:]
		return string(id)
	}
	r.fail(errors.New("bad id form"))
	return ""
}

func (r *reader) time() time.Time {
	var loc *time.Location
	switch r.byte() {
	case 0:
		loc = time.UTC
	case 1:
		loc = time.FixedZone("", int(r.varint()))
	case 2:
		return time.Time{}
	default:
		r.fail(errors.New("bad time form"))
		return time.Time{}
	}
	sec := r.varint()
	nsec := r.uvarint()
	if nsec >= uint64(time.Second) {
		r.fail(fmt.Errorf("%d nanoseconds", nsec))
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).In(loc)
}

// done checks that the whole value was read.
func (r *reader) done() error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes left over", len(r.b))
	}
	return r.err
}

// decodeItem decodes the stored item at sequence seq.
func decodeItem(seq uint64, v []byte) (execution.TimelineItem, error) {
	r := reader{b: v}
	if f := r.byte(); f != itemFormat && r.err == nil {
		return execution.TimelineItem{}, fmt.Errorf("item format %#x, want %#x", f, itemFormat)
	}
	it := execution.TimelineItem{Sequence: seq}
	it.ID = r.id()
	it.At = r.time()
	it.Kind = execution.ItemKind(r.str())
	it.Record = eventstore.Kind(r.str())
	it.Text = r.str()
	it.Source = r.str()
	it.Signal = eventstore.SignalType(r.str())
	it.MessageID = r.str()
	it.MessageType = r.str()
	it.ObservationID = r.str()
	it.RequestID = r.str()
	if n := r.uvarint(); n > 0 {
		if n > uint64(len(r.b)) {
			// Every choice takes at least a byte.
			r.fail(errShort)
		} else {
			it.Choices = make([]string, n)
			for i := range it.Choices {
				it.Choices[i] = r.str()
			}
		}
	}
	it.Action = eventstore.DecisionAction(r.str())
	it.Lifecycle = eventstore.Lifecycle(r.str())
	it.Attention = eventstore.Attention(r.str())
	if len(r.b) > 0 {
		it.Reason = r.str()
		it.Needs = r.str()
	}
	if len(r.b) > 0 {
		it.Tool = r.tool()
	}
	if err := r.done(); err != nil {
		return execution.TimelineItem{}, err
	}
	return it, nil
}

// decodeDecision decodes a stored decision.
func decodeDecision(v []byte) (execution.DecisionRef, error) {
	r := reader{b: v}
	if f := r.byte(); f != decisionFormat && r.err == nil {
		return execution.DecisionRef{}, fmt.Errorf("decision format %#x, want %#x", f, decisionFormat)
	}
	d := execution.DecisionRef{
		DecisionID: r.str(),
		Action:     eventstore.DecisionAction(r.str()),
		Reason:     r.str(),
		Sequence:   r.uvarint(),
	}
	if err := r.done(); err != nil {
		return execution.DecisionRef{}, err
	}
	return d, nil
}
