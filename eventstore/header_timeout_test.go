package eventstore

import (
	"strings"
	"testing"
)

// TestHeaderTimeout: a header's time limit is a positive number of
// milliseconds, or absent; it survives the round trip.
func TestHeaderTimeout(t *testing.T) {
	h := validRecords()[KindHeader].(*Header)
	h.TimeoutMs = 90000
	data, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"timeoutMs":90000`) {
		t.Fatalf("encoded header %s, want timeoutMs 90000", data)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*Header).TimeoutMs; got != 90000 {
		t.Fatalf("decoded timeoutMs %d, want 90000", got)
	}
	h.TimeoutMs = -1
	if err := Validate(h); err == nil || !strings.Contains(err.Error(), "timeoutMs") {
		t.Fatalf("Validate(timeoutMs -1) = %v, want a problem with timeoutMs", err)
	}
}
