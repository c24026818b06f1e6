package projections_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/projections"
)

// benchJournals × benchPerJournal records (plus one header each) are
// projected per iteration.
const (
	benchJournals   = 50
	benchPerJournal = 200
)

func benchLog(b *testing.B) (*eventstore.JetStreamStore, uint64) {
	b.Helper()
	_, s := startLog(b)
	writeJournals(b, s, refs(benchJournals), 0, benchPerJournal)
	return s, lastOffset(b, s)
}

func reportRecords(b *testing.B, n uint64) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkProjectCatchUp projects the whole log into a new file: reading
// it from JetStream, decoding, folding and writing in batches of 1000.
func BenchmarkProjectCatchUp(b *testing.B) {
	s, n := benchLog(b)
	for _, noSync := range []bool{false, true} {
		b.Run("nosync="+strconv.FormatBool(noSync), func(b *testing.B) {
			for b.Loop() {
				db, err := projections.Open(projections.Config{Path: filepath.Join(b.TempDir(), "p.db"), NoSync: noSync})
				if err != nil {
					b.Fatal(err)
				}
				if err := db.CatchUp(context.Background(), s, nil); err != nil {
					b.Fatal(err)
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportRecords(b, n)
		})
	}
}

// BenchmarkRawBoltBatchPut writes the same records' bytes keyed by offset,
// 1000 per transaction: the floor of what bbolt costs for this log.
func BenchmarkRawBoltBatchPut(b *testing.B) {
	s, n := benchLog(b)
	var values [][]byte
	for e, err := range s.ReadLog(context.Background(), 1) {
		if err != nil {
			b.Fatal(err)
		}
		v, err := eventstore.Encode(e.Record)
		if err != nil {
			b.Fatal(err)
		}
		values = append(values, v)
	}
	bucket := []byte("log")
	for _, noSync := range []bool{false, true} {
		b.Run("nosync="+strconv.FormatBool(noSync), func(b *testing.B) {
			for b.Loop() {
				db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{NoSync: noSync})
				if err != nil {
					b.Fatal(err)
				}
				for from := 0; from < len(values); from += 1000 {
					err := db.Update(func(tx *bolt.Tx) error {
						bk, err := tx.CreateBucketIfNotExists(bucket)
						if err != nil {
							return err
						}
						for i := from; i < min(from+1000, len(values)); i++ {
							var k [8]byte
							binary.BigEndian.PutUint64(k[:], uint64(i+1))
							if err := bk.Put(k[:], values[i]); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := db.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportRecords(b, n)
		})
	}
}

// BenchmarkSessionList lists sessions as GET /v1/sessions does: the order
// from the runs' heads, then the runs of the sessions answered. "first-20"
// answers 20 of 1,000 sessions, "all" every one, the cost of listing
// before the order was read from the heads alone.
func BenchmarkSessionList(b *testing.B) {
	_, s := startLog(b)
	writeJournals(b, s, refs(1000), 0, 24)
	db := openDB(b, projections.Config{Path: filepath.Join(b.TempDir(), "p.db")})
	catchUp(b, db, s)
	for _, limit := range []int{20, 0} {
		name := "all"
		if limit > 0 {
			name = "first-" + strconv.Itoa(limit)
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				ids, err := db.SessionIDs()
				if err != nil {
					b.Fatal(err)
				}
				if limit > 0 {
					ids = ids[:limit]
				}
				for _, id := range ids {
					if _, err := db.SessionRuns(id); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
