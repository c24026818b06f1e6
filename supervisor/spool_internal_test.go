package supervisor

import (
	"os"
	"testing"
)

// A spool that cannot be written (here /dev/full: ENOSPC) keeps its first
// error for exit.json and drops the output after it.
func TestSpoolWriteErrorIsKept(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := newSpool(f)
	s.append(Stdout, append(make([]byte, headerLen), "lost"...))
	first := s.err
	s.append(Stdout, append(make([]byte, headerLen), "dropped"...))
	if first == nil || s.err != first || s.size != 0 {
		t.Errorf("after writes to a full disk: got err %v (then %v), size %d; want the first error kept and size 0", first, s.err, s.size)
	}
}
