package projections

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

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

// SessionIDs returns every session's id, the sessions by their first
// run's start, newest first. It reads only the runs' heads, so that a
// caller that wants a few sessions loads the runs of those alone
// (SessionRuns) rather than every run there is.
func (db *DB) SessionIDs() ([]string, error) {
	type session struct {
		id      string
		started time.Time
	}
	var out []session
	err := db.view(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketContract)
		return tx.Bucket(bucketBySession).ForEach(func(k, _ []byte) error {
			i := bytes.LastIndexByte(k, 0)
			if i < 0 {
				return corrupt(db.cfg.Path, fmt.Sprintf("by-session key %q has no separator", k), nil)
			}
			r, err := loadRunHead(runs, db.cfg.Path, k[i+1:])
			if err != nil {
				return err
			}
			// Keys run in session order: a session's runs are together.
			if n := len(out); n > 0 && out[n-1].id == string(k[:i]) {
				if r.CreatedAt.Before(out[n-1].started) {
					out[n-1].started = r.CreatedAt
				}
				return nil
			}
			out = append(out, session{string(k[:i]), r.CreatedAt})
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b session) int { return b.started.Compare(a.started) })
	ids := make([]string, len(out))
	for i, s := range out {
		ids[i] = s.id
	}
	return ids, nil
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
