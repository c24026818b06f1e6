package eventstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// backoff waits a random, growing time before retrying a lost race, so that
// a writer with a warm head cache does not win every race against a cold one.
func backoff(ctx context.Context, attempt int) error {
	limit := min(time.Duration(attempt)*250*time.Microsecond, 20*time.Millisecond)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(limit)) + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) &&
		(apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// ErrUnavailable reports a log that did not answer for UnavailableWait: a
// cluster without a majority, a server that stays down. What was asked may
// or may not have been done.
var ErrUnavailable = errors.New("eventstore: unavailable")

// DefaultUnavailableWait is how long an append waits for a log that does
// not answer: longer than a cluster takes to elect a new leader, and than a
// client takes to reconnect to a restarted server.
const DefaultUnavailableWait = 15 * time.Second

// unavailable reports an error of a log that exists but cannot answer for a
// moment: no server responds on the subject, a request timed out (ctx
// itself has not ended), the connection is being re-established, or the
// server says it is temporarily unavailable (503). A closed connection is
// not: it was closed on purpose, or gave up reconnecting.
func unavailable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// outage is the span of one append during which the log did not answer.
type outage struct {
	since time.Time
	delay time.Duration
}

// waitUnavailable returns err unless it says the log cannot answer for the
// moment; then it waits (50 ms, doubling up to a second) and returns nil
// for the caller to try again, until the outage has lasted UnavailableWait.
func (s *JetStreamStore) waitUnavailable(ctx context.Context, o *outage, err error) error {
	if !unavailable(ctx, err) {
		return err
	}
	now := time.Now()
	if o.since.IsZero() {
		o.since, o.delay = now, 50*time.Millisecond
	}
	if now.Sub(o.since) >= s.cfg.UnavailableWait {
		return fmt.Errorf("%w: the log has not answered for %s: %w", ErrUnavailable, s.cfg.UnavailableWait.Round(time.Second), err)
	}
	t := time.NewTimer(o.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	o.delay = min(2*o.delay, time.Second)
	return nil
}

// lostAck reports a publish whose outcome is unknown: the server may have
// stored the message without the ack reaching us.
func lostAck(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrConnectionReconnecting)
}

// waiting runs fn again while its error says the log cannot answer for the
// moment, as appends do, up to UnavailableWait.
func (s *JetStreamStore) waiting(ctx context.Context, fn func() error) error {
	var down outage
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if werr := s.waitUnavailable(ctx, &down, err); werr != nil {
			return werr
		}
	}
}

// attemptTimeout bounds one publish or message get, whatever the caller's
// deadline. A request to a stream whose leader just died is answered by
// no one, and waiting the caller's whole deadline (or the client's 5s
// default, twice) for it made appends and decisions pause for 10 to 30s
// after a cluster lost a node, where a new leader is elected within about
// 9s. A request that times out is tried again, and an append first looks
// for its record, so a slow answer costs a retry, not a duplicate.
const attemptTimeout = 2 * time.Second

// replicated reports whether the stream keeps more than one copy, as it
// was configured when the store opened.
func (s *JetStreamStore) replicated() bool {
	info := s.stream.CachedInfo()
	return info != nil && info.Config.Replicas > 1
}
