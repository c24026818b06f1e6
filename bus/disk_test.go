package bus_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/fixtures"
)

// diskTestSize is the tmpfs the full-disk tests fill: the default reserve on
// it is a tenth, 6.4 MiB.
const diskTestSize = 64 << 20

// fastChecks makes the guard measure the disk often, so the tests wait little.
func fastChecks(c *bus.Config) { c.DiskCheckInterval = 20 * time.Millisecond }

// TestDiskGuardFillsToTheReserveAndResumes fills the disk with the log
// itself: it takes writes well past the 75% of the space free at start that
// nats-server's own limit allowed, refuses them as a full disk at the
// reserve, and takes them again, without a restart, once space is freed.
func TestDiskGuardFillsToTheReserveAndResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := fixtures.MountTmpfs(t, diskTestSize)
	// Room to free later: the log's own records cannot be deleted.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 16<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	b := fixtures.StartNATSAt(t, dir, fastChecks)
	start, ok := b.DiskSpace()
	if !ok {
		t.Fatal("DiskSpace() reports no measurement for an embedded server on Linux")
	}
	if want := uint64(diskTestSize / 10); start.Reserve != want {
		t.Errorf("reserve on a %d-byte disk = %d, want a tenth, %d", diskTestSize, start.Reserve, want)
	}
	if start.Full || start.Dir != dir {
		t.Errorf("at start DiskSpace() = %+v, want not full, Dir %s", start, dir)
	}

	const size = 64 << 10
	var acked []uint64
	var refused error
	for refused == nil {
		ack, err := publishRecord(ctx, b.JetStream(), len(acked))
		if err != nil {
			refused = err
			break
		}
		acked = append(acked, ack.Sequence)
		if len(acked) > diskTestSize/size {
			t.Fatalf("the log took %d records of %d bytes on a %d-byte disk without refusing one", len(acked), size, diskTestSize)
		}
	}
	if !eventstore.IsDiskFull(refused) {
		t.Fatalf("the write that did not fit failed with %v, want an error IsDiskFull recognises", refused)
	}
	stored := uint64(len(acked) * size)
	t.Logf("stored %d bytes in %d records; %d were free at start, reserve %d", stored, len(acked), start.Free, start.Reserve)
	// The server's own limit stopped at 75% of the space free at start;
	// the guard lets the log have all of it but the reserve (less the
	// stream's index and the records' framing).
	if want := start.Free - start.Reserve - 2<<20; stored < want {
		t.Errorf("the log took %d bytes before refusing, want at least %d (free at start %d less the reserve %d and 2 MiB)", stored, want, start.Free, start.Reserve)
	}
	waitDisk(ctx, t, b, true)

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitDisk(ctx, t, b, false)
	ack, err := publishRecord(ctx, b.JetStream(), len(acked))
	if err != nil {
		t.Fatalf("write after space was freed: %v, want it taken without a restart", err)
	}
	acked = append(acked, ack.Sequence)
	checkRecords(ctx, t, b, acked)
}

// TestDiskGuardRestartsAStreamThatMetAFullDisk makes a write meet a full
// disk the guard did not see coming (another process filled it between two
// measurements). nats-server keeps that write error and answers no later
// write; once space is freed, the guard restarts JetStream and the log takes
// writes again, with every record acknowledged before still there.
func TestDiskGuardRestartsAStreamThatMetAFullDisk(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := fixtures.MountTmpfs(t, diskTestSize)
	b := fixtures.StartNATSAt(t, dir, fastChecks)
	var acked []uint64
	for i := range 10 {
		ack, err := publishRecord(ctx, b.JetStream(), i)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, ack.Sequence)
	}

	// The guard is made to see a vast, empty disk, so its limit lets the
	// next writes through to the real, full one.
	const vast = 1 << 40
	bus.SetDiskStat(b, func(string) (uint64, uint64, error) { return vast, 2 * vast, nil })
	for {
		if d, _ := b.DiskSpace(); d.Free == vast {
			break
		}
		if !sleep(ctx, 10*time.Millisecond) {
			t.Fatal("the guard did not measure the stand-in disk before the test's deadline")
		}
	}
	filler := fixtures.FillDisk(t, filepath.Join(dir, "filler"))
	// A block file may have room left in its last page, so the first few
	// small writes can still land.
	stuck := false
	for i := len(acked); i < len(acked)+1000 && !stuck; i++ {
		ack, err := publishTimeout(ctx, b.JetStream(), i, 2*time.Second)
		if err != nil {
			stuck = true
			break
		}
		acked = append(acked, ack.Sequence)
	}
	if !stuck {
		t.Fatal("1000 writes onto a full disk were all acknowledged")
	}
	// The stream now refuses every write, however small.
	if _, err := publishTimeout(ctx, b.JetStream(), len(acked), time.Second); err == nil {
		t.Fatal("a write after one met the full disk was acknowledged while the disk is still full, want it refused")
	}

	bus.SetDiskStat(b, nil)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for {
		ack, err := publishTimeout(ctx, b.JetStream(), len(acked), 2*time.Second)
		if err == nil {
			acked = append(acked, ack.Sequence)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the log took no write after space was freed (last error: %v), want JetStream restarted by the guard", err)
		}
	}
	checkRecords(ctx, t, b, acked)
}

// publishRecord publishes record i, 64 KiB, with its own Msg-Id.
func publishRecord(ctx context.Context, js jetstream.JetStream, i int) (*jetstream.PubAck, error) {
	return js.Publish(ctx, testSubject, recordData(i), jetstream.WithMsgID(fmt.Sprintf("rec-%d", i)))
}

// publishTimeout is publishRecord bounded by d: a stream stuck on a write
// error answers nothing.
func publishTimeout(ctx context.Context, js jetstream.JetStream, i int, d time.Duration) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return publishRecord(ctx, js, i)
}

// recordData is record i's payload: 64 KiB naming i.
func recordData(i int) []byte {
	data := bytes.Repeat([]byte{'x'}, 64<<10)
	copy(data, fmt.Sprintf("record %d ", i))
	return data
}

// checkRecords checks that the stream holds exactly the acknowledged
// records, at offsets 1, 2, 3…, each with its own payload.
func checkRecords(ctx context.Context, t *testing.T, b *bus.Bus, acked []uint64) {
	t.Helper()
	info, err := b.Stream().Info(ctx)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	if got, want := info.State.Msgs, uint64(len(acked)); got != want || info.State.FirstSeq != 1 || info.State.LastSeq != want {
		t.Errorf("stream holds %d records at %d..%d, want the %d acknowledged at 1..%d", got, info.State.FirstSeq, info.State.LastSeq, want, want)
	}
	for i, seq := range acked {
		if seq != uint64(i+1) {
			t.Errorf("record %d was acknowledged at offset %d, want %d", i, seq, i+1)
		}
		m, err := b.Stream().GetMsg(ctx, seq)
		if err != nil {
			t.Errorf("read record %d at offset %d: %v", i, seq, err)
			continue
		}
		if !bytes.Equal(m.Data, recordData(i)) {
			t.Errorf("record at offset %d holds %.20q…, want record %d", seq, m.Data, i)
		}
	}
}

// waitDisk waits until the guard reports the disk full (or not).
func waitDisk(ctx context.Context, t *testing.T, b *bus.Bus, full bool) {
	t.Helper()
	for {
		d, _ := b.DiskSpace()
		if d.Full == full {
			return
		}
		if !sleep(ctx, 10*time.Millisecond) {
			t.Fatalf("DiskSpace() = %+v until the test's deadline, want Full %v", d, full)
		}
	}
}

// sleep waits d, or reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
