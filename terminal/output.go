package terminal

import (
	"sync"
	"unicode/utf8"
)

// subscriberQueueBytes bounds the output queued for one subscriber. A
// subscriber further behind than this loses chunks.
const subscriberQueueBytes = 1 << 20

// subscriber delivers output chunks to one callback on its own goroutine
// through a queue bounded by subscriberQueueBytes.
type subscriber struct {
	fn   func([]byte)
	wake chan struct{} // capacity 1: "the queue changed"
	quit chan struct{} // closed by stop

	stopOnce sync.Once

	mu     sync.Mutex
	queue  [][]byte
	queued int
	closed bool // no more chunks will come; deliver the queue and return
}

func newSubscriber(fn func([]byte)) *subscriber {
	return &subscriber{fn: fn, wake: make(chan struct{}, 1), quit: make(chan struct{})}
}

// push queues a chunk without ever blocking; a chunk that does not fit is
// dropped.
func (s *subscriber) push(chunk []byte) {
	s.mu.Lock()
	if s.closed || s.queued+len(chunk) > subscriberQueueBytes {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, chunk)
	s.queued += len(chunk)
	s.mu.Unlock()
	s.notify()
}

// close says no more chunks will come.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.notify()
}

// stop ends delivery as soon as the running callback returns.
func (s *subscriber) stop() {
	s.stopOnce.Do(func() { close(s.quit) })
}

func (s *subscriber) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber) run() {
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue, s.queued = nil, 0
		s.mu.Unlock()
		for _, chunk := range batch {
			select {
			case <-s.quit:
				return
			default:
			}
			s.fn(chunk)
		}
		if closed {
			s.mu.Lock()
			empty := len(s.queue) == 0
			s.mu.Unlock()
			if empty {
				return
			}
		}
	}
}

// ring keeps the last size bytes written to it. Its buffer grows with the
// output up to size and is then reused, so a quiet terminal costs little
// and a noisy one no more than size.
type ring struct {
	size int
	buf  []byte
	pos  int // next write position once len(buf) == size
}

func (r *ring) write(p []byte) {
	if len(p) >= r.size {
		if cap(r.buf) < r.size {
			r.buf = make([]byte, r.size)
		}
		r.buf = r.buf[:r.size]
		copy(r.buf, p[len(p)-r.size:])
		r.pos = 0
		return
	}
	if len(r.buf) < r.size {
		room := r.size - len(r.buf)
		if len(p) <= room {
			r.buf = append(r.buf, p...)
			return
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
		r.pos = 0
	}
	n := copy(r.buf[r.pos:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
	}
	r.pos = (r.pos + len(p)) % r.size
}

// tail returns the kept bytes, oldest first, without a leading partial
// rune when older bytes have been overwritten.
func (r *ring) tail() string {
	if len(r.buf) < r.size {
		return string(r.buf)
	}
	out := make([]byte, 0, r.size)
	out = append(out, r.buf[r.pos:]...)
	out = append(out, r.buf[:r.pos]...)
	for i := 0; i < utf8.UTFMax-1 && len(out) > 0 && !utf8.RuneStart(out[0]); i++ {
		out = out[1:]
	}
	return string(out)
}
