package storebench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	// The peer's driver: pure Go, so the benchmark needs no C toolchain.
	_ "modernc.org/sqlite"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// Targets are the lowest acceptable ratios of the store's durable append
// throughput to the SQLite peer's, measured in the same run.
const (
	peerSingleTarget = 1.0
	peerSpreadTarget = 2.0
)

// peerSchema is the SQLite peer's event table: one row per record, a journal's
// sequence unique within it, the encoded record as the row's payload.
const peerSchema = `CREATE TABLE records (
	offset   INTEGER PRIMARY KEY,
	journal  TEXT    NOT NULL,
	sequence INTEGER NOT NULL,
	data     BLOB    NOT NULL,
	UNIQUE (journal, sequence)
)`

// peerInsert appends one record at its journal's next sequence: one
// statement, one transaction, so SQLite serializes it against every other
// writer and the unique index refuses a sequence taken twice.
const peerInsert = `INSERT INTO records (journal, sequence, data)
	SELECT ?1, COALESCE(MAX(sequence), 0) + 1, ?2 FROM records WHERE journal = ?1`

// peerDescription says what the peer is, for the report.
const peerDescription = "SQLite (modernc.org/sqlite), WAL, synchronous=FULL, one row per record in one transaction, unique (journal, sequence), writers sharing one connection"

// sqlitePeer is an event table in SQLite configured to acknowledge a write
// only once it is on disk, as the store does with --sync always.
type sqlitePeer struct {
	db   *sql.DB
	path string
}

// openSQLitePeer creates a fresh database at path.
func openSQLitePeer(ctx context.Context, path string) (*sqlitePeer, error) {
	// Every connection of the pool gets the pragmas. busy_timeout makes a
	// writer that finds the write lock taken wait for it instead of failing.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(60000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite peer: %w", err)
	}
	// SQLite takes one writer at a time. Writers on connections of their
	// own meet a taken write lock and sleep in the busy handler, which
	// halved the peer's throughput with 16 writers; on one connection they
	// queue in the pool instead, the peer's best showing.
	db.SetMaxOpenConns(1)
	p := &sqlitePeer{db: db, path: path}
	if _, err := db.ExecContext(ctx, peerSchema); err != nil {
		return nil, errors.Join(fmt.Errorf("create sqlite peer table: %w", err), p.Close())
	}
	var mode, synchronous string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite peer: %w", err), p.Close())
	}
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&synchronous); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlite peer: %w", err), p.Close())
	}
	// synchronous FULL is 2.
	if mode != "wal" || synchronous != "2" {
		return nil, errors.Join(fmt.Errorf("sqlite peer: journal_mode %s, synchronous %s (want wal, 2)", mode, synchronous), p.Close())
	}
	return p, nil
}

// Close closes the database and removes its files.
func (p *sqlitePeer) Close() error {
	err := p.db.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if rerr := os.Remove(p.path + suffix); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// append writes data as the next record of every journal record i goes to,
// record i to journals[i%len(journals)], from the given number of writers.
func (p *sqlitePeer) append(ctx context.Context, journals []string, n int, data []byte, writers int) error {
	return spread(ctx, n, writers, func(ctx context.Context, i int) error {
		if _, err := p.db.ExecContext(ctx, peerInsert, journals[i%len(journals)], data); err != nil {
			return fmt.Errorf("sqlite peer insert: %w", err)
		}
		return nil
	})
}

// peerSide returns the side of a comparison that appends n copies of data
// to the SQLite peer, spread over journals, in a fresh database in dir.
func peerSide(dir string, refs func(round int) ([]eventstore.Reference, error), n int, data []byte, writers int) side {
	return func(ctx context.Context, round int) (_ time.Duration, err error) {
		rs, err := refs(round)
		if err != nil {
			return 0, err
		}
		journals := make([]string, len(rs))
		for k, ref := range rs {
			journals[k] = ref.JournalID
		}
		p, err := openSQLitePeer(ctx, filepath.Join(dir, fmt.Sprintf("peer-%d.db", round)))
		if err != nil {
			return 0, err
		}
		defer benchkit.CloseInto(p, &err)
		return benchkit.Timed(func() error { return p.append(ctx, journals, n, data, writers) })
	}
}
