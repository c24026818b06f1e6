package eventstore_test

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/eventstore"
)

func TestIsDiskFull(t *testing.T) {
	api := func(code int, errCode jetstream.ErrorCode, desc string) error {
		// As nats.go hands it on from a publish.
		return fmt.Errorf("nats: %w", &jetstream.APIError{Code: code, ErrorCode: errCode, Description: desc})
	}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"ErrDiskFull wrapped", fmt.Errorf("append to j: %w", eventstore.ErrDiskFull), true},
		{"ENOSPC from a file write", fmt.Errorf("commit: %w", &fs.PathError{Op: "write", Path: "/d/projections.db", Err: syscall.ENOSPC}), true},
		{"EDQUOT", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.EDQUOT}, true},
		{"account storage limit (the disk guard)", api(400, 10002, "resource limits exceeded for account"), true},
		{"server storage limit", api(503, 10023, "insufficient resources"), true},
		{"storage resources exceeded", api(500, 10047, "insufficient storage resources available"), true},
		{"store failed on a full disk", api(503, 10077, "write /d/nats/1.blk: no space left on device"), true},
		{"store failed otherwise", api(503, 10077, "input/output error"), false},
		{"wrong last sequence", api(400, 10071, "wrong last sequence: 3"), false},
		{"memory exhausted", api(500, 10028, "insufficient memory resources available"), false},
		{"another I/O error", &fs.PathError{Op: "write", Path: "/d/x", Err: syscall.EIO}, false},
		{"a plain error", errors.New("no space left in the queue"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventstore.IsDiskFull(tt.err); got != tt.want {
				t.Errorf("IsDiskFull(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
