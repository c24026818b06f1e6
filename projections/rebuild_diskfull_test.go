package projections_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
	"github.com/agentjournal/agentjournal/projections"
)

// TestRebuildOnAFullDisk rebuilds a projection whose disk is full, with no
// byte left (the new file's layout fails) and with some room (a later commit
// fails): the rebuild fails as a full disk, leaves no .rebuild file behind
// and the live file serving as before; once space is freed, it succeeds.
func TestRebuildOnAFullDisk(t *testing.T) {
	for _, tt := range []struct {
		name string
		room int64 // bytes left free after the disk is filled
	}{
		{"no room", 0},
		{"room for the layout only", 64 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s, rs := writtenLog(t, 6, 150)
			disk := fixtures.MountTmpfs(t, 16<<20)
			live := openDB(t, projections.Config{Path: filepath.Join(disk, "projections.db")})
			catchUp(t, live, s)
			before, err := live.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(live.Path()); err != nil || info.Size() <= 2*tt.room {
				t.Fatalf("the live file is %v bytes (%v), want more than twice the room left (%d), so the rebuild cannot fit", info.Size(), err, tt.room)
			}

			filler := fixtures.FillDisk(t, filepath.Join(disk, "filler"))
			if tt.room > 0 {
				info, err := os.Stat(filler)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(filler, info.Size()-tt.room); err != nil {
					t.Fatal(err)
				}
			}
			err = projections.Rebuild(ctx, s, live, nil)
			if err == nil {
				t.Fatal("Rebuild on a full disk succeeded, want it to fail")
			}
			if !eventstore.IsDiskFull(err) {
				t.Errorf("Rebuild on a full disk failed with %v, want an error IsDiskFull recognises", err)
			}
			if _, serr := os.Lstat(live.Path() + ".rebuild"); serr == nil || !os.IsNotExist(serr) {
				t.Errorf("after the failed rebuild, %s.rebuild: %v, want it removed", live.Path(), serr)
			}
			if got, err := live.Checkpoint(); err != nil || got != before {
				t.Errorf("live checkpoint after the failed rebuild = %d, %v, want %d as before", got, err, before)
			}
			for _, ref := range rs {
				if _, err := live.Execution(ref.AgentExecutionID); err != nil {
					t.Errorf("live Execution(%s) after the failed rebuild: %v", ref.AgentExecutionID, err)
				}
			}

			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			if err := projections.Rebuild(ctx, s, live, nil); err != nil {
				t.Fatalf("Rebuild once space was freed: %v", err)
			}
			if got, err := live.Checkpoint(); err != nil || got != lastOffset(t, s) {
				t.Errorf("checkpoint after the rebuild = %d, %v, want the log's last offset %d", got, err, lastOffset(t, s))
			}
		})
	}
}
