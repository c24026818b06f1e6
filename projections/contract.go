package projections

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/agentjournal/agentjournal/contract"
)

// Run returns an execution's contract fold (contract.Run), from which the
// runtime contract's shapes are built. An unknown id is ErrNotFound.
func (db *DB) Run(id string) (*contract.Run, error) {
	var r *contract.Run
	err := db.view(func(tx *bolt.Tx) (err error) {
		r, err = db.run(tx, []byte(id))
		return err
	})
	return r, err
}

func (db *DB) run(tx *bolt.Tx, id []byte) (*contract.Run, error) {
	return loadRun(tx.Bucket(bucketContract), db.cfg.Path, id)
}

// SessionRuns returns the runs of one session in the order they started
// (a resume after the run it resumes). An unknown session is ErrNotFound.
func (db *DB) SessionRuns(sessionID string) ([]*contract.Run, error) {
	var runs []*contract.Run
	err := db.view(func(tx *bolt.Tx) error {
		for _, id := range scanIndex(tx.Bucket(bucketBySession), valuePrefix(sessionID), false) {
			r, err := db.run(tx, []byte(id))
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("session %q: %w", sessionID, ErrNotFound)
	}
	sortRuns(runs)
	return runs, nil
}

// Sessions returns every session's runs, each in the order they started,
// the sessions by their first run's start, newest first, at most limit
// of them (0: all).
func (db *DB) Sessions(limit int) ([][]*contract.Run, error) {
	var out [][]*contract.Run
	err := db.view(func(tx *bolt.Tx) error {
		var cur []byte
		var runs []*contract.Run
		flush := func() {
			if len(runs) > 0 {
				sortRuns(runs)
				out = append(out, runs)
			}
			runs = nil
		}
		err := tx.Bucket(bucketBySession).ForEach(func(k, _ []byte) error {
			i := bytes.LastIndexByte(k, 0)
			if i < 0 {
				return corrupt(db.cfg.Path, fmt.Sprintf("by-session key %q has no separator", k), nil)
			}
			if !bytes.Equal(k[:i], cur) {
				flush()
				cur = append(cur[:0], k[:i]...)
			}
			r, err := db.run(tx, k[i+1:])
			if err != nil {
				return err
			}
			runs = append(runs, r)
			return nil
		})
		flush()
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b []*contract.Run) int { return b[0].CreatedAt.Compare(a[0].CreatedAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func sortRuns(runs []*contract.Run) {
	slices.SortStableFunc(runs, func(a, b *contract.Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if b.Resumes == a.RunID {
			return -1
		}
		if a.Resumes == b.RunID {
			return 1
		}
		return strings.Compare(a.RunID, b.RunID)
	})
}
