package projections

import (
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/execution"
)

// stateCacheSize bounds the executions a DB keeps decoded between batches.
// A state without its processed ids is a few hundred bytes, so the cache
// stays around a megabyte while covering every execution active at once on
// a busy daemon.
const stateCacheSize = 4096

// stateCache keeps the most recently used execution states, as stored:
// without timeline and with empty processed-id maps (those live in the
// processed bucket). A batch folds records into the cached states in
// place, so a batch that fails must purge the cache: its states may be
// ahead of the file.
type stateCache struct {
	max     int
	entries map[string]*cacheEntry
	// root is the sentinel of a ring ordered by use: root.next is the
	// most recently used entry, root.prev the least.
	root cacheEntry
}

type cacheEntry struct {
	id    string
	state *execution.State
	// run is the execution's contract fold, once a batch has loaded it.
	run        *contract.Run
	prev, next *cacheEntry
}

func newStateCache(max int) *stateCache {
	c := &stateCache{max: max, entries: make(map[string]*cacheEntry, max)}
	c.root.prev, c.root.next = &c.root, &c.root
	return c
}

// get returns the cached state of id and marks it used.
func (c *stateCache) get(id string) (*execution.State, bool) {
	e, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	c.unlink(e)
	c.pushFront(e)
	return e.state, true
}

// put caches the state of id, evicting the least recently used entry when
// the cache is full.
func (c *stateCache) put(id string, s *execution.State) {
	if e, ok := c.entries[id]; ok {
		if e.state != s {
			e.run = nil
		}
		e.state = s
		c.unlink(e)
		c.pushFront(e)
		return
	}
	if len(c.entries) >= c.max {
		old := c.root.prev
		c.unlink(old)
		delete(c.entries, old.id)
	}
	e := &cacheEntry{id: id, state: s}
	c.entries[id] = e
	c.pushFront(e)
}

// run returns the cached contract run of id, without marking it used.
func (c *stateCache) run(id string) (*contract.Run, bool) {
	e, ok := c.entries[id]
	if !ok || e.run == nil {
		return nil, false
	}
	return e.run, true
}

// setRun keeps the contract run of id beside its state, if its state is
// cached.
func (c *stateCache) setRun(id string, r *contract.Run) {
	if e, ok := c.entries[id]; ok {
		e.run = r
	}
}

// purge empties the cache.
func (c *stateCache) purge() {
	clear(c.entries)
	c.root.prev, c.root.next = &c.root, &c.root
}

func (c *stateCache) unlink(e *cacheEntry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *stateCache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}
