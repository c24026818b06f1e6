package eventstore

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// LogState is what the log says of itself: how many records it holds and
// which of its offsets it knows it lost. The log refuses deletes and
// purges, so every offset it lists as deleted was lost (a damaged or
// truncated file), never removed on purpose.
type LogState struct {
	// Records is the number of records the log holds.
	Records uint64
	// FirstOffset and LastOffset bound the offsets the log counts; a log
	// that lost its newest records may count past the last it holds.
	FirstOffset, LastOffset uint64
	// Deleted is how many offsets between the two hold no record.
	Deleted uint64
	// DeletedOffsets are those offsets, as far as the log lists them.
	DeletedOffsets []uint64
	// LostOffsets are the offsets the log found unreadable when it loaded
	// its files, and LostBytes their size.
	LostOffsets []uint64
	LostBytes   uint64
}

// LogState reads the log's state (see LogState).
func (s *JetStreamStore) LogState(ctx context.Context) (LogState, error) {
	if s.closed.Load() {
		return LogState{}, ErrClosed
	}
	info, err := s.stream.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return LogState{}, fmt.Errorf("read the log's state: %w", err)
	}
	st := info.State
	ls := LogState{Records: st.Msgs, FirstOffset: st.FirstSeq, LastOffset: st.LastSeq,
		Deleted: uint64(st.NumDeleted), DeletedOffsets: st.Deleted}
	if st.Lost != nil {
		ls.LostOffsets, ls.LostBytes = st.Lost.Msgs, st.Lost.Bytes
	}
	return ls, nil
}
