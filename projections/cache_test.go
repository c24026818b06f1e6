package projections

import (
	"fmt"
	"testing"

	"github.com/agentjournal/agentjournal/execution"
)

func TestStateCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newStateCache(3)
	states := map[string]*execution.State{}
	for _, id := range []string{"a", "b", "c"} {
		states[id] = &execution.State{ID: id}
		c.put(id, states[id])
	}
	if s, ok := c.get("a"); !ok || s != states["a"] {
		t.Fatalf("get(a) = %v, %v; want the state put", s, ok)
	}
	// b is now the least recently used.
	c.put("d", &execution.State{ID: "d"})
	for id, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := c.get(id); ok != want {
			t.Errorf("after evicting: get(%s) found %v, want %v", id, ok, want)
		}
	}
	// Putting a cached id replaces its state without evicting another.
	replaced := &execution.State{ID: "c"}
	c.put("c", replaced)
	if s, _ := c.get("c"); s != replaced || len(c.entries) != 3 {
		t.Errorf("put of a cached id: got %v with %d entries, want the new state and 3", s, len(c.entries))
	}
	c.purge()
	if _, ok := c.get("a"); ok || len(c.entries) != 0 {
		t.Errorf("after purge: %d entries, want none", len(c.entries))
	}
	for i := range 10 {
		c.put(fmt.Sprint(i), &execution.State{})
	}
	if len(c.entries) != 3 {
		t.Errorf("%d entries after 10 puts, want the bound 3", len(c.entries))
	}
	for _, id := range []string{"7", "8", "9"} {
		if _, ok := c.get(id); !ok {
			t.Errorf("get(%s) missing; want the 3 newest kept", id)
		}
	}
}
