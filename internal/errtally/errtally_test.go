package errtally

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTally(t *testing.T) {
	late, other := errors.New("context deadline exceeded"), errors.New("stop ae-1: starting")
	// Another error with the same message counts with the first.
	again := fmt.Errorf("context %s", "deadline exceeded")
	tests := []struct {
		name string
		errs []error
		want []Count
	}{
		{name: "none", errs: []error{nil, nil}, want: nil},
		{name: "one message", errs: []error{late, nil, again}, want: []Count{{Err: late, N: 2}}},
		{name: "two, in the order they came", errs: []error{other, late, late, other, late},
			want: []Count{{Err: other, N: 2}, {Err: late, N: 3}}},
	}
	for _, tt := range tests {
		got := Tally(tt.errs)
		if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
			t.Errorf("%s: Tally (-want +got):\n%s", tt.name, diff)
		}
	}
}
