package projbench

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// rssInterval is how often an rssSampler reads the resident set size.
const rssInterval = 50 * time.Millisecond

// resident is the process's resident memory, in bytes: in all, and the
// anonymous (heaps, stacks) and file-backed (mapped files, such as a bbolt
// file) parts of it.
type resident struct {
	Total, Anon, File uint64
}

// rssSampler records the largest resident set size of the process seen
// while it runs. The kernel's own peak (VmHWM) cannot be reset, so it would
// report the set-up's peak rather than the measured work's.
type rssSampler struct {
	stop chan struct{}
	wg   sync.WaitGroup
	peak resident
}

// sampleRSS starts sampling. On a system without /proc the peak stays 0.
func sampleRSS() *rssSampler {
	s := &rssSampler{stop: make(chan struct{})}
	s.sample()
	s.wg.Go(func() {
		t := time.NewTicker(rssInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	})
	return s
}

func (s *rssSampler) sample() {
	if r := residentNow(); r.Total > s.peak.Total {
		s.peak = r
	}
}

// Stop ends sampling and returns the peak.
func (s *rssSampler) Stop() resident {
	close(s.stop)
	s.wg.Wait()
	s.sample()
	return s.peak
}

// residentNow reads VmRSS, RssAnon and RssFile from /proc/self/status;
// zeros when it cannot.
func residentNow() resident {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return resident{}
	}
	defer f.Close()
	var r resident
	fields := map[string]*uint64{"VmRSS:": &r.Total, "RssAnon:": &r.Anon, "RssFile:": &r.File}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte{'\t'})
		dst := fields[string(name)]
		if !ok || dst == nil {
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return resident{}
		}
		*dst = kb << 10
	}
	return r
}
