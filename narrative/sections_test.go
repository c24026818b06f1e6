package narrative

import (
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
)

// TestEveryKindHasASection: the narrative decides for every registered
// record kind where its line goes, or that it tells none.
func TestEveryKindHasASection(t *testing.T) {
	for _, k := range eventstore.Kinds() {
		if _, ok := sections[k]; !ok {
			t.Errorf("%s: not in sections (name the section that tells it, or \"\" for none)", k)
		}
	}
}

// TestLinesAreTimelineTexts: a record the narrative tells as it is has
// the record's timeline text as its line, in its kind's section; a
// checkpoint is not told.
func TestLinesAreTimelineTexts(t *testing.T) {
	s, err := eventstore.OpenFile(eventstore.FileConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ref, err := s.EnsureJournal(t.Context(), storetest.Ref(eventstore.OwnerTask, "t-1", "ae-1"), storetest.Header("generic"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []eventstore.Record{
		&eventstore.SnapshotCreated{Resource: "/work/repo", Ref: "refs/agentjournal/ae-1/1", Commit: strings.Repeat("c", 40),
			Tree: strings.Repeat("e", 40), AtSequence: 1, Files: 3},
		&eventstore.RestoreAttempted{Resource: "/work/repo", Mode: eventstore.RestoreKeep, Outcome: eventstore.RestoreUnsupported,
			Detail: "not a git work tree"},
		&eventstore.CheckpointCreated{CheckpointID: "turn-1", Trigger: eventstore.CheckpointTurnEnd, Source: eventstore.SourceDaemon,
			AtSequence: 3, StatusAtCapture: eventstore.RunRunning, TodoIDs: []string{}, ArtifactRefs: []string{}, MemoryRefs: []string{},
			ApprovalRefs: []string{}, StateSummary: eventstore.CheckpointSummary{Title: "fix the bug"}},
		&eventstore.Interruption{Reason: eventstore.InterruptCrash, Detail: "signal: killed", Turn: 1},
	} {
		if _, err := s.Append(t.Context(), ref, r); err != nil {
			t.Fatalf("append %s: %v", r.Kind(), err)
		}
	}
	var recs []eventstore.Record
	for e, err := range s.ReadJournal(t.Context(), ref, 1) {
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, e.Record)
	}
	run, err := BuildRun(recs)
	if err != nil {
		t.Fatal(err)
	}
	told := map[uint64]Line{}
	for _, l := range run.Lines {
		if l.Marker == Observed {
			told[l.Sequence] = l
		}
	}
	for _, r := range recs {
		seq := r.RecordBase().Sequence
		l, ok := told[seq]
		want := sections[r.Kind()]
		switch {
		case want == "" && ok:
			t.Errorf("%s: told as %q, want no line", r.Kind(), l.Text)
		case want == "":
		case !ok:
			t.Errorf("%s: no line, want one in %s", r.Kind(), want)
		case l.Section != want || l.Text != eventstore.TimelineText(r):
			t.Errorf("%s: line %s %q, want %s %q", r.Kind(), l.Section, l.Text, want, eventstore.TimelineText(r))
		}
	}
}

// TestMdInert: raw HTML in an agent's Markdown becomes text; code and
// comparisons keep their angle brackets.
func TestMdInert(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"inline tag", "see <b>this</b> now", "see &lt;b>this&lt;/b> now"},
		{"block", "<div onclick=x>\nhi\n</div>\n\ntext", "&lt;div onclick=x>\nhi\n&lt;/div>\n\ntext"},
		{"code span", "use `a<b>` here", "use `a<b>` here"},
		{"fence", "```\n<script>\n```", "```\n<script>\n```"},
		{"comparison", "1 < 2 and **bold**", "1 < 2 and **bold**"},
	} {
		if got := mdInert(tc.in); got != tc.want {
			t.Errorf("%s: mdInert(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}
