package integrity_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/integrity"
	"github.com/agentjournal/agentjournal/projections"
)

// damagedLog writes 5 journals of 601 records each, interleaved, into one
// block file, has a read model apply them, damages the block the way mode
// says with the server stopped, and reopens the log and the read model.
func damagedLog(t *testing.T, mode string) (*eventstore.JetStreamStore, *integrity.Guard, *projections.DB, []eventstore.Reference) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	viewsPath := filepath.Join(t.TempDir(), "views.db")
	b := fixtures.StartNATSAt(t, dir)
	s := fixtures.OpenStore(t, b)
	var refs []eventstore.Reference
	for j := range 5 {
		refs = append(refs, fixtures.WriteJournal(t, s, fmt.Sprintf("ae-%d", j), nil, false))
	}
	for i := range 3000 {
		ref := refs[i%5]
		if _, err := s.Append(ctx, ref, storetest.Activity(ref.JournalID, i)); err != nil {
			t.Fatal(err)
		}
	}
	views, err := projections.Open(projections.DefaultConfig(viewsPath))
	if err != nil {
		t.Fatal(err)
	}
	if err := views.CatchUp(ctx, s, nil); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(views.Close(), s.Close(), b.Close()); err != nil {
		t.Fatal(err)
	}
	fixtures.DamageLog(t, dir, mode)

	b = fixtures.StartNATSAt(t, dir)
	guard := &integrity.Guard{}
	s, err = eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName(), Refuse: guard.Refuse})
	if err != nil {
		t.Fatal(err)
	}
	if views, err = projections.Open(projections.DefaultConfig(viewsPath)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { views.Close() })
	return s, guard, views, refs
}

// TestChecksFindEachDamage: each way a block file is damaged is found by
// the check that can see it (the quick one at start for a lost tail and a
// block cut short, only the deep one for a hole that changes no count),
// each finding names the execution, what it lacks and what to do, and the
// guard fed the findings refuses appends to those journals only.
func TestChecksFindEachDamage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		mode  string
		quick bool // the quick check finds journals
	}{
		{"lost tail", fixtures.DamageTail, true},
		{"block cut short", fixtures.DamageCut, true},
		{"64 bytes zeroed", fixtures.DamageFlip, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			s, guard, views, refs := damagedLog(t, tc.mode)

			quick, err := integrity.Quick(ctx, s, views)
			if err != nil {
				t.Fatal(err)
			}
			if got := journalsNamed(quick.Findings); (len(got) > 0) != tc.quick {
				t.Fatalf("quick check found journals %v (findings %v), want some: %v", got, quick.Findings, tc.quick)
			}
			deep, err := integrity.Deep(ctx, s, views)
			if err != nil {
				t.Fatal(err)
			}
			damaged := journalsNamed(deep.Findings)
			if len(damaged) == 0 {
				t.Fatalf("deep check found no damaged journal: %v", deep.Findings)
			}
			for _, f := range deep.Findings {
				if f.AgentExecutionID == "" {
					continue
				}
				if text := f.String(); !strings.Contains(text, "lacks sequence") || !strings.Contains(text, "restore it from an export") {
					t.Errorf("finding %q does not say what is missing and what to do", text)
				}
			}

			t.Logf("found: %v", deep.Findings)

			guard.Add(deep.Findings...)
			for _, ref := range refs {
				_, err := s.Append(ctx, ref, storetest.Activity(ref.JournalID, 9999))
				var de *integrity.DamageError
				switch {
				case damaged[ref.AgentExecutionID] && (!errors.Is(err, eventstore.ErrDamaged) || !errors.As(err, &de) || de.Finding.AgentExecutionID != ref.AgentExecutionID):
					t.Errorf("append to damaged %s: %v, want refused naming its damage", ref.AgentExecutionID, err)
				case !damaged[ref.AgentExecutionID] && err != nil:
					t.Errorf("append to sound %s: %v", ref.AgentExecutionID, err)
				}
			}
		})
	}
}

func journalsNamed(fs []integrity.Finding) map[string]bool {
	named := map[string]bool{}
	for _, f := range fs {
		if f.AgentExecutionID != "" {
			named[f.AgentExecutionID] = true
		}
	}
	return named
}
