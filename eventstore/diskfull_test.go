package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
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

// TestAppendToAFullLogFailsAtOnce appends to a NATS server of another
// process whose own storage limit is reached: nats-server answers
// "insufficient resources" with a 503, which is no outage to wait out. The
// append fails at once, as a full disk, instead of after UnavailableWait.
func TestAppendToAFullLogFailsAtOnce(t *testing.T) {
	// Bounded well below UnavailableWait: an append that waits fails the
	// test with the context's error instead of a full disk.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), JetStreamMaxStore: 256 << 10, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	cfg := bus.DefaultConfig()
	cfg.URL = srv.ClientURL()
	b, err := bus.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, err := eventstore.OpenJetStream(ctx, b.JetStream(), eventstore.JetStreamConfig{Stream: b.StreamName(), UnavailableWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ref := storetest.Ref(eventstore.OwnerTask, "t", "full")
	if _, err := s.EnsureJournal(ctx, ref, storetest.Header("a")); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 16<<10)
	for i := 0; ; i++ {
		_, err := s.Append(ctx, ref, storetest.Message(fmt.Sprint("m-", i), text))
		if err == nil {
			if i > 100 {
				t.Fatalf("%d records of 16 KiB appended under a 256 KiB storage limit", i)
			}
			continue
		}
		if !eventstore.IsDiskFull(err) {
			t.Fatalf("append %d past the storage limit failed with %v, want at once an error IsDiskFull recognises", i, err)
		}
		t.Logf("append %d: %v", i, err)
		break
	}
	// The journal is whole, up to the last record it took.
	var seq uint64
	for e, err := range s.ReadJournal(ctx, ref, 1) {
		if err != nil {
			t.Fatalf("read the journal back: %v", err)
		}
		seq++
		if got := e.Record.RecordBase().Sequence; got != seq {
			t.Fatalf("record %d has sequence %d", seq, got)
		}
	}
}
