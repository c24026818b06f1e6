package eventstore

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestAckPosition(t *testing.T) {
	tests := []struct {
		reply           string
		offset, pending uint64
		ok              bool
	}{
		// Reply subjects as servers write them: without and with domain
		// and account hash, and with more trailing tokens than today's.
		{"$JS.ACK.LOG.cons.1.42.41.1700000000000000000.7", 42, 7, true},
		{"$JS.ACK._.ABCHASH.LOG.cons.1.42.41.1700000000000000000.0.rand", 42, 0, true},
		{"$JS.ACK.hub.ABCHASH.LOG.cons.3.18446744073709551615.9.1.5.rand.more", 18446744073709551615, 5, true},
		{"$JS.ACK.hub.ABCHASH.LOG.cons.1.42.41.1700000000000000000.12", 42, 12, true},
		// Anything else is left to Metadata.
		{"", 0, 0, false},
		{"_INBOX.abc", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.42.41.17", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.42.41.17.7.x", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.x.41.17.7", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.0.41.17.7", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.42.41.17.-1", 0, 0, false},
		{"$JS.ACK.LOG.cons.1.18446744073709551616.41.17.7", 0, 0, false},
	}
	for _, tt := range tests {
		offset, pending, ok := ackPosition(tt.reply)
		if offset != tt.offset || pending != tt.pending || ok != tt.ok {
			t.Errorf("ackPosition(%q) = %d, %d, %v; want %d, %d, %v", tt.reply, offset, pending, ok, tt.offset, tt.pending, tt.ok)
		}
	}
}

func TestAckPositionAllocates(t *testing.T) {
	reply := fmt.Sprintf("$JS.ACK._.H.LOG.c.1.%d.1.1.%d.r", 123456, 7)
	if n := testing.AllocsPerRun(100, func() { ackPosition(reply) }); n != 0 {
		t.Errorf("ackPosition allocates %.0f times per call, want 0", n)
	}
}

// ackPosition reads any subject without failing, and what it accepts is a
// reply subject whose tokens hold the numbers it returns.
func FuzzAckPosition(f *testing.F) {
	f.Add("$JS.ACK.LOG.cons.1.42.41.1700000000000000000.7")
	f.Add("$JS.ACK._.ABCHASH.LOG.cons.1.42.41.1700000000000000000.0.rand")
	f.Add("$JS.ACK.a.b.c.d.e.f.g.h.i.j.k.l.m")
	f.Add("$JS.ACK.......")
	f.Fuzz(func(t *testing.T, reply string) {
		offset, pending, ok := ackPosition(reply)
		if !ok {
			if offset != 0 || pending != 0 {
				t.Fatalf("refused %q but returned %d, %d", reply, offset, pending)
			}
			return
		}
		tokens := strings.Split(reply, ".")
		if tokens[0] != "$JS" || tokens[1] != "ACK" || offset == 0 {
			t.Fatalf("accepted %q as offset %d", reply, offset)
		}
		seq, left := 5, 8
		if len(tokens) == 9 {
			seq, left = 3, 6
		}
		if tokens[2+seq] != strconv.FormatUint(offset, 10) && strings.TrimLeft(tokens[2+seq], "0") != strconv.FormatUint(offset, 10) {
			t.Fatalf("%q: offset %d is not token %q", reply, offset, tokens[2+seq])
		}
		if got, err := strconv.ParseUint(tokens[2+left], 10, 64); err != nil || got != pending {
			t.Fatalf("%q: pending %d is not token %q", reply, pending, tokens[2+left])
		}
	})
}
