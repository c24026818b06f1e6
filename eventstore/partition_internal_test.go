package eventstore

import (
	"fmt"
	"slices"
	"testing"
)

// Every partition has one owner, the shares differ by one at most, and a
// member joining takes partitions only from the others, leaving theirs in
// place where their shares allow.
func TestOwnedSharesEvenly(t *testing.T) {
	for _, partitions := range []int{2, 6, 12, 64} {
		for n := 1; n <= 5; n++ {
			var members []string
			for i := range n {
				members = append(members, fmt.Sprintf("daemon-%d", i))
			}
			owner := map[int]string{}
			lo, hi := partitions, 0
			for _, m := range members {
				mine := owned(m, members, partitions)
				lo, hi = min(lo, len(mine)), max(hi, len(mine))
				for _, p := range mine {
					if o, ok := owner[p]; ok {
						t.Errorf("%d partitions, %d members: partition %d owned by %s and %s", partitions, n, p, o, m)
					}
					owner[p] = m
				}
			}
			if len(owner) != partitions {
				t.Errorf("%d partitions, %d members: %d owned", partitions, n, len(owner))
			}
			if hi-lo > 1 {
				t.Errorf("%d partitions, %d members: shares from %d to %d, want within one", partitions, n, lo, hi)
			}
		}
	}
	if got := owned("x", []string{"a", "b"}, 4); got != nil {
		t.Errorf("a member not in the group owns %v", got)
	}
	// The members' order does not matter: every member computes the same.
	a := owned("b", []string{"a", "b", "c"}, 12)
	b := owned("b", []string{"c", "a", "b"}, 12)
	if !slices.Equal(a, b) {
		t.Errorf("owned depends on the members' order: %v and %v", a, b)
	}
}
