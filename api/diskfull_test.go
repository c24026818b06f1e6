package api

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/agentjournal/agentjournal/api/wire"
)

// TestDiskFullAnswers maps a write refused for want of space to 507
// disk_full, quoting the daemon's measurement of the disk when it has one,
// and a write that failed otherwise while the disk is full too.
func TestDiskFullAnswers(t *testing.T) {
	enospc := fmt.Errorf("append to j: %w", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.ENOSPC})
	full := DiskSpace{Dir: "/data", Free: 1024, Reserve: 64 << 20, Full: true}
	roomy := DiskSpace{Dir: "/data", Free: 80 << 20, Reserve: 64 << 20}
	tests := []struct {
		name     string
		method   string
		err      error
		disk     *DiskSpace // nil: the daemon measures none
		wantCode string
		want     []string // in the message
	}{
		{"no measurement", "POST", enospc, nil, wire.CodeDiskFull,
			[]string{"the log's storage is full", "max_file_store", "no restart needed"}},
		{"full disk", "POST", enospc, &full, wire.CodeDiskFull,
			[]string{"the disk holding the data directory /data is full: 1.0 KiB (1024 bytes) free", "more than 64.0 MiB (67108864 bytes) is free", "free at least 64.0 MiB (67107841 bytes)"}},
		{"a record larger than the room left", "POST", enospc, &roomy, wire.CodeDiskFull,
			[]string{"has no room for this write: 80.0 MiB (83886080 bytes) free"}},
		{"a write timed out on a full disk", "POST", fmt.Errorf("append: %w", errors.New("the log has not answered for 15s")), &full, wire.CodeDiskFull,
			[]string{"is full"}},
		{"a read failing on a full disk stays internal", "GET", errors.New("boom"), &full, wire.CodeInternal, nil},
		{"an internal error with room stays internal", "POST", errors.New("boom"), &roomy, wire.CodeInternal, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{}
			if tt.disk != nil {
				d := *tt.disk
				s.cfg.DiskSpace = func() (DiskSpace, bool) { return d, true }
			}
			ae := s.answer(httptest.NewRequest(tt.method, "/v1/executions/x/messages", nil), tt.err)
			if ae.code != tt.wantCode {
				t.Fatalf("code = %s (%d %q), want %s", ae.code, ae.status, ae.message, tt.wantCode)
			}
			if tt.wantCode == wire.CodeDiskFull && ae.status != http.StatusInsufficientStorage {
				t.Errorf("status = %d, want 507", ae.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(ae.message, w) {
					t.Errorf("message %q does not say %q", ae.message, w)
				}
			}
		})
	}
}
