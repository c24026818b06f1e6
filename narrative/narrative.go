package narrative

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
)

// Version is the version of the JSON shape (docs/narrative.md).
const Version = 1

// Marker tells a line copied from one record from a line derived from
// several: replay consumers trust the first over the second.
type Marker string

const (
	Observed Marker = "observed"
	Inferred Marker = "inferred"
)

// Section names the question a line answers.
type Section string

const (
	Requested    Section = "requested"
	Ran          Section = "ran"
	Pauses       Section = "approvals-and-pauses"
	Artifacts    Section = "artifacts-and-todos"
	Interruption Section = "interruptions"
	Outcome      Section = "outcome"
)

// Sections lists the sections in the order a run shows them.
var Sections = []Section{Requested, Ran, Pauses, Artifacts, Interruption, Outcome}

// Titles are the sections' headings.
var Titles = map[Section]string{
	Requested:    "What was requested",
	Ran:          "What ran",
	Pauses:       "Approvals and pauses",
	Artifacts:    "Artifacts and todos",
	Interruption: "Interruptions",
	Outcome:      "Why it ended so",
}

// Ref names one record: the anchor of a line.
type Ref struct {
	EventID     string `json:"eventId"`
	ExecutionID string `json:"executionId"`
	Sequence    uint64 `json:"sequence"`
}

// Line is one statement of the narrative.
type Line struct {
	Marker  Marker  `json:"marker"`
	Section Section `json:"section"`
	// Kind is the record kind of an observed line, or what an inferred
	// line derives (blocked-period, input-wait, turn, duration, session-gap).
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Actor is who sent a message or answered a request (its source).
	Actor string    `json:"actor,omitempty"`
	At    time.Time `json:"at"`
	// Ref is the record the line stands on; for an inferred line, the
	// record that closes what it derives.
	Ref
	// From is where an inferred span starts; absent on observed lines.
	From *Ref `json:"from,omitempty"`
}

// Run is the narrative of one execution's journal.
type Run struct {
	ExecutionID string `json:"executionId"`
	JournalID   string `json:"journalId"`
	AgentID     string `json:"agentId"`
	// Owner is the entity the run works for, as ENTITY/ID.
	Owner      string     `json:"owner"`
	SessionID  string     `json:"sessionId"`
	Resumes    string     `json:"resumes,omitempty"`
	ForkedFrom string     `json:"forkedFrom,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
	// Lifecycle and Reason are the last lifecycle recorded and its reason.
	Lifecycle string `json:"lifecycle"`
	Reason    string `json:"reason,omitempty"`
	Records   int    `json:"records"`
	// Missing says what the journal lacks, so the narrative is read as
	// partial: no activity records, no terminal recording.
	Missing []string `json:"missing"`
	Lines   []Line   `json:"lines"`
	// Story is the run told turn by turn, which the Markdown and HTML
	// renderings show; the JSON keeps the lines alone.
	Story *Story `json:"-"`
}

// Section returns the run's lines of one section, in journal order.
func (r *Run) Section(s Section) []Line {
	var out []Line
	for _, l := range r.Lines {
		if l.Section == s {
			out = append(out, l)
		}
	}
	return out
}

// Narrative is what Execution and Session build.
type Narrative struct {
	Version int `json:"version"`
	// Subject is "execution" or "session".
	Subject   string `json:"subject"`
	ID        string `json:"id"`
	SessionID string `json:"sessionId"`
	Runs      []Run  `json:"runs"`
	// Between holds the inferred links from one run of a session to the
	// next: how the earlier one ended and which run took over.
	Between []Line `json:"between"`
}

// Source reads journals: an eventstore.Store, the daemon's API, or an
// exported journal (Records).
type Source interface {
	ReadJournal(ctx context.Context, ref eventstore.Reference, fromSeq uint64) iter.Seq2[eventstore.Entry, error]
	Lookup(ctx context.Context, agentExecutionID string) (eventstore.Reference, error)
}

// SessionSource also lists the journals, to find a session's runs.
type SessionSource interface {
	Source
	Journals(ctx context.Context) ([]eventstore.Reference, error)
}

// Execution builds the narrative of one execution.
func Execution(ctx context.Context, src Source, id string) (*Narrative, error) {
	recs, err := read(ctx, src, id)
	if err != nil {
		return nil, err
	}
	run, err := BuildRun(recs)
	if err != nil {
		return nil, err
	}
	return &Narrative{Version: Version, Subject: "execution", ID: id, SessionID: run.SessionID, Runs: []Run{*run}, Between: []Line{}}, nil
}

// Session builds the narrative of a session: every execution whose header
// names it, in the order they started. id may be the session's id or any of
// its executions'.
func Session(ctx context.Context, src SessionSource, id string) (*Narrative, error) {
	session := id
	if recs, err := read(ctx, src, id); err == nil {
		if h, ok := recs[0].(*eventstore.Header); ok {
			session = h.Session()
		}
	} else if !errors.Is(err, eventstore.ErrJournalNotFound) {
		return nil, err
	}
	refs, err := src.Journals(ctx)
	if err != nil {
		return nil, err
	}
	n := &Narrative{Version: Version, Subject: "session", ID: id, SessionID: session, Runs: []Run{}, Between: []Line{}}
	for _, ref := range refs {
		h, err := header(ctx, src, ref)
		if err != nil {
			return nil, err
		}
		if h == nil || h.Session() != session {
			continue
		}
		recs, err := read(ctx, src, ref.AgentExecutionID)
		if err != nil {
			return nil, err
		}
		run, err := BuildRun(recs)
		if err != nil {
			return nil, err
		}
		n.Runs = append(n.Runs, *run)
	}
	if len(n.Runs) == 0 {
		return nil, fmt.Errorf("session %s: %w", session, eventstore.ErrJournalNotFound)
	}
	slices.SortStableFunc(n.Runs, func(a, b Run) int { return a.StartedAt.Compare(b.StartedAt) })
	for i := 1; i < len(n.Runs); i++ {
		n.Between = append(n.Between, link(&n.Runs[i-1], &n.Runs[i]))
	}
	return n, nil
}

// link infers how one run of a session led to the next.
func link(prev, next *Run) Line {
	end := prev.Lines[len(prev.Lines)-1]
	how := "ended " + prev.Lifecycle
	for _, l := range prev.Lines {
		if l.Section == Interruption && l.Marker == Observed {
			end, how = l, "was interrupted: "+l.Text
		}
	}
	if prev.EndedAt == nil && how == "ended "+prev.Lifecycle {
		how = "stopped recording while " + prev.Lifecycle
	}
	verb := "then ran"
	if next.Resumes == prev.ExecutionID {
		verb = "then resumed by"
	}
	first := next.Lines[0]
	return Line{Marker: Inferred, Section: Interruption, Kind: "session-gap",
		Text: fmt.Sprintf("run %s %s; %s %s", prev.ExecutionID, how, verb, next.ExecutionID),
		At:   first.At, Ref: first.Ref, From: &end.Ref}
}

func header(ctx context.Context, src Source, ref eventstore.Reference) (*eventstore.Header, error) {
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, err
		}
		h, _ := e.Record.(*eventstore.Header)
		return h, nil
	}
	return nil, nil
}

func read(ctx context.Context, src Source, id string) ([]eventstore.Record, error) {
	ref, err := src.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	var recs []eventstore.Record
	for e, err := range src.ReadJournal(ctx, ref, 1) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, e.Record)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: empty journal: %w", id, eventstore.ErrJournalNotFound)
	}
	return recs, nil
}

// span is an open period an inferred line closes.
type span struct {
	from Ref
	at   time.Time
	what string
}

// builder walks one journal in order.
type builder struct {
	run       *Run
	ref       Ref
	at        time.Time
	blocked   *span
	waiting   *span
	request   string
	answers   map[string]Line
	questions map[string]string
	turn      int
	turnStart *span
	turnCalls int
	// turnCommands counts the commands a turn ran outside tool calls.
	turnCommands int
	activity     int
	plan         *eventstore.PlanSignal
	planRef      Ref
	planAt       time.Time
	files        map[string]bool
	claims       map[string]bool
	// unended is set once the records are read when none ended the run.
	unended bool
}

// BuildRun builds the narrative of one journal from its records, in
// sequence order, the header first. A journal missing records renders from
// what remains, and the run's Missing says what is absent.
func BuildRun(records []eventstore.Record) (*Run, error) {
	if len(records) == 0 {
		return nil, errors.New("narrative: no records")
	}
	h, ok := records[0].(*eventstore.Header)
	if !ok {
		return nil, fmt.Errorf("narrative: the first record is %s, not the journal header", records[0].Kind())
	}
	run := &Run{ExecutionID: h.AgentExecutionID, JournalID: h.JournalID, AgentID: h.AgentID, Owner: string(h.Scope) + "/" + h.OwnerID, SessionID: h.Session(),
		StartedAt: h.OccurredAt, Records: len(records), Missing: []string{}, Lines: []Line{}}
	if h.Resumes != nil {
		run.Resumes = h.Resumes.AgentExecutionID
	}
	if h.ForkedFrom != nil {
		run.ForkedFrom = fmt.Sprintf("%s@%d", h.ForkedFrom.AgentExecutionID, h.ForkedFrom.Sequence)
	}
	b := &builder{run: run, answers: map[string]Line{}, questions: map[string]string{}, files: map[string]bool{}, claims: map[string]bool{}}
	refs := make([]Ref, len(records))
	for i, r := range records {
		id, err := eventstore.EventID(r)
		if err != nil {
			return nil, err
		}
		base := r.RecordBase()
		b.ref = Ref{EventID: id, ExecutionID: base.AgentExecutionID, Sequence: base.Sequence}
		refs[i] = b.ref
		b.at = base.OccurredAt
		b.apply(r)
	}
	b.finish()
	run.Story = buildStory(records, refs)
	return run, nil
}

func (b *builder) add(s Section, kind, text string) *Line {
	b.run.Lines = append(b.run.Lines, Line{Marker: Observed, Section: s, Kind: kind, Text: text, At: b.at, Ref: b.ref})
	return &b.run.Lines[len(b.run.Lines)-1]
}

func (b *builder) infer(s Section, kind, text string, from span) {
	f := from.from
	b.run.Lines = append(b.run.Lines, Line{Marker: Inferred, Section: s, Kind: kind, Text: text, At: b.at, Ref: b.ref, From: &f})
}

// sections is where the observed line of a record of each kind goes; ""
// for a kind the narrative does not tell. A line's text is the record's
// timeline text (eventstore.TimelineText); the kinds apply handles itself
// may move a line elsewhere by what it says (an answer to Pauses, the
// decision on a claim to Outcome) or leave it out. A test holds the table
// complete over the registered kinds.
var sections = map[eventstore.Kind]Section{
	eventstore.KindHeader:       Requested,
	eventstore.KindMessage:      Requested,
	eventstore.KindDelivery:     Requested,
	eventstore.KindObservation:  Ran,
	eventstore.KindDecision:     Ran,
	eventstore.KindStateChanged: Ran,
	eventstore.KindActivity:     Ran,
	eventstore.KindOwnerEffect:  Artifacts,
	// Reserved, never written.
	eventstore.KindProjection:   "",
	eventstore.KindInterruption: Interruption,
	eventstore.KindSnapshot:     Artifacts,
	eventstore.KindRestore:      Artifacts,
	// A checkpoint restates the run's state at a point: the lines around
	// it tell that state as it came about.
	eventstore.KindCheckpoint: "",
}

func (b *builder) apply(r eventstore.Record) {
	switch r := r.(type) {
	case *eventstore.MessageAccepted:
		b.message(r)
		return
	case *eventstore.MessageDelivery:
		if r.Status != eventstore.DeliveryFailed && r.Status != eventstore.DeliverySkipped {
			return
		}
	case *eventstore.Observation:
		b.observation(r)
		return
	case *eventstore.Decision:
		if b.claims[r.ObservationID] {
			b.add(Outcome, string(r.Kind()), eventstore.TimelineText(r))
			return
		}
	case *eventstore.StateChanged:
		b.state(r)
		return
	case *eventstore.ActivityUpdated:
		b.activityUpdate(r)
		return
	}
	if s := sections[r.Kind()]; s != "" {
		b.add(s, string(r.Kind()), eventstore.TimelineText(r))
	}
}

func (b *builder) message(r *eventstore.MessageAccepted) {
	text := eventstore.TimelineText(r)
	if req, _ := r.RequestID(); req != "" {
		l := b.add(Pauses, string(r.Kind()), text)
		l.Actor = string(r.Source)
		b.answers[req] = *l
		return
	}
	b.closeTurn()
	b.turn++
	l := b.add(sections[r.Kind()], string(r.Kind()), text)
	l.Actor = string(r.Source)
	b.turnStart = &span{from: b.ref, at: b.at}
	b.turnCalls, b.turnCommands = 0, 0
}

// observation tells a signal in the section of what it asks or claims;
// a plan is told as todos once the run is read, usage not at all, and an
// observation without a signal neither.
func (b *builder) observation(r *eventstore.Observation) {
	if r.Signal == nil {
		return
	}
	s := sections[r.Kind()]
	switch p := r.Signal.Payload.(type) {
	case *eventstore.NeedsInputSignal:
		b.questions[p.RequestID] = p.Question
		s = Pauses
	case *eventstore.BlockedSignal:
		s = Pauses
	case *eventstore.CompletedClaimSignal, *eventstore.FailedClaimSignal, *eventstore.ReadyForVerificationSignal:
		b.claims[r.ObservationID] = true
		s = Outcome
	case *eventstore.PlanSignal:
		b.plan, b.planRef, b.planAt = p, b.ref, b.at
		return
	case *eventstore.UsageSignal:
		return
	}
	b.add(s, string(r.Kind()), eventstore.TimelineText(r))
}

func (b *builder) state(r *eventstore.StateChanged) {
	if r.Lifecycle != "" {
		b.run.Lifecycle, b.run.Reason = string(r.Lifecycle), r.Reason
	}
	if r.Lifecycle == "" && r.Attention == "" && !r.CurrentInputRequestID.Set {
		return
	}
	// The activity a change names is left to the tool calls and commands
	// the narrative tells.
	told := *r
	told.Activity = ""
	text := eventstore.TimelineText(&told)
	s := sections[r.Kind()]
	switch {
	case r.Lifecycle.Final():
		s = Outcome
		at := r.OccurredAt
		b.run.EndedAt = &at
	case r.Attention == eventstore.AttentionBlocked || r.Attention == eventstore.AttentionAwaitingOperator || r.CurrentInputRequestID.Set:
		s = Pauses
	}
	b.add(s, string(r.Kind()), text)
	// Periods close before they open: a change from blocked to awaiting
	// an answer ends one and starts the other.
	if r.Attention != "" && r.Attention != eventstore.AttentionBlocked || r.Lifecycle.Final() {
		b.closeBlocked()
	}
	if req := r.CurrentInputRequestID; req.Set && req.ID != b.request || r.Lifecycle.Final() {
		b.closeWait(r.Lifecycle.Final())
	}
	if r.Attention == eventstore.AttentionBlocked && b.blocked == nil {
		b.blocked = &span{from: b.ref, at: b.at, what: r.Reason}
	}
	if req := r.CurrentInputRequestID; req.Set && req.ID != "" && b.waiting == nil {
		b.request = req.ID
		b.waiting = &span{from: b.ref, at: b.at, what: req.ID}
	}
	if r.Lifecycle.Final() {
		b.closeTurn()
	}
}

func (b *builder) closeBlocked() {
	if b.blocked == nil {
		return
	}
	text := fmt.Sprintf("blocked from seq %d to seq %d (%s)", b.blocked.from.Sequence, b.ref.Sequence, b.at.Sub(b.blocked.at).Round(time.Millisecond))
	if b.unended {
		text = fmt.Sprintf("blocked from seq %d, still blocked at the last record (seq %d)", b.blocked.from.Sequence, b.ref.Sequence)
	}
	if b.blocked.what != "" {
		text += ": " + b.blocked.what
	}
	b.infer(Pauses, "blocked-period", text, *b.blocked)
	b.blocked = nil
}

func (b *builder) closeWait(ended bool) {
	if b.waiting == nil {
		return
	}
	req := b.waiting.what
	text := fmt.Sprintf("waited on input request %s from seq %d to seq %d (%s)", req, b.waiting.from.Sequence, b.ref.Sequence, b.at.Sub(b.waiting.at).Round(time.Millisecond))
	if b.unended {
		text = fmt.Sprintf("input request %s open from seq %d, still open at the last record (seq %d)", req, b.waiting.from.Sequence, b.ref.Sequence)
	}
	if a, ok := b.answers[req]; ok {
		text += fmt.Sprintf("; answered by %s at seq %d", a.Actor, a.Sequence)
	} else if ended {
		text += "; the run ended unanswered"
	}
	b.infer(Pauses, "input-wait", text, *b.waiting)
	b.waiting, b.request = nil, ""
}

func (b *builder) closeTurn() {
	if b.turnStart == nil {
		return
	}
	// Dropped in finish when the journal has no activity records: a
	// count of tool calls is then unknown, not zero.
	text := fmt.Sprintf("turn %d took %d tool calls", b.turn, b.turnCalls)
	if b.turnCommands > 0 {
		text += fmt.Sprintf(" and ran %d commands", b.turnCommands)
	}
	b.infer(Ran, "turn", text, *b.turnStart)
	b.turnStart = nil
}

// activityUpdate tells a tool call, or a command run outside one, and the
// first time a file is touched; it counts both for the turn.
func (b *builder) activityUpdate(r *eventstore.ActivityUpdated) {
	b.activity++
	kind := string(r.Kind())
	t := r.CurrentTarget
	if c := r.ToolCall; c != nil {
		if c.Status == eventstore.ToolCallStarted {
			b.turnCalls++
		}
		b.add(sections[r.Kind()], kind, eventstore.TimelineText(r))
	} else if t != nil && t.Kind == eventstore.TargetCommand && (t.Path != "" || t.Label != "") {
		b.turnCommands++
		b.add(sections[r.Kind()], kind, eventstore.TimelineText(r))
	}
	if t != nil && t.Kind == eventstore.TargetFile && t.Path != "" && !b.files[t.Path] {
		b.files[t.Path] = true
		b.add(Artifacts, kind, "file touched: "+t.Path)
	}
}

func (b *builder) finish() {
	run := b.run
	if b.plan != nil {
		for _, it := range b.plan.Items {
			run.Lines = append(run.Lines, Line{Marker: Observed, Section: Artifacts, Kind: string(eventstore.KindObservation),
				Text: fmt.Sprintf("todo [%s] %s", it.Status, it.Text), At: b.planAt, Ref: b.planRef})
		}
	}
	if b.run.EndedAt == nil {
		// No end recorded: what was open at the last record is told as
		// still open there, not as ended.
		b.unended = true
		b.closeBlocked()
		b.closeWait(false)
		b.closeTurn()
	}
	if b.activity == 0 {
		run.Missing = append(run.Missing, "no activity records: tool calls unknown")
		run.Lines = slices.DeleteFunc(run.Lines, func(l Line) bool { return l.Marker == Inferred && l.Kind == "turn" })
	}
	if run.EndedAt == nil {
		last := "nothing"
		if run.Lifecycle != "" {
			last = run.Lifecycle
		}
		run.Missing = append(run.Missing, fmt.Sprintf("no terminal recording: the run's end is unknown (last lifecycle recorded: %s)", last))
	} else {
		start := Ref{}
		if len(run.Lines) > 0 {
			start = run.Lines[0].Ref
		}
		last := Ref{}
		for _, l := range run.Lines {
			if l.Section == Outcome && l.Kind == string(eventstore.KindStateChanged) {
				last = l.Ref
			}
		}
		d := run.EndedAt.Sub(run.StartedAt).Round(time.Millisecond)
		run.Lines = append(run.Lines, Line{Marker: Inferred, Section: Outcome, Kind: "duration",
			Text: fmt.Sprintf("ended %s after %s (%s)", run.Lifecycle, d, reasonOr(run.Reason)), At: *run.EndedAt, Ref: last, From: &start})
	}
}

func reasonOr(r string) string {
	if r == "" {
		return "no reason recorded"
	}
	return r
}
