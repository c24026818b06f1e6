package eventstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// How the readers of one name share the log is changed by starting them
// again: a group's partition count by starting its members with another
// count, a group by one reader of the whole log by starting that reader.
// Either is done by the first reader to start once no member is left in
// the group (a member that stops leaves it at once, one that died once its
// entries lapse), and either starts again from the lowest progress any
// partition saved: records above it that some partition had handled are
// handed to the new readers again, which idempotent handlers allow, and
// none is skipped.

// errRegrouped is a change another reader made while this one made it.
var errRegrouped = errors.New("the group changed meanwhile")

// otherMembers names the members in the group's members bucket other than
// self, with those holding partition locks: a member that stopped without
// leaving, this one before a restart included, counts until its entries
// lapse, unless it is self.
func otherMembers(ctx context.Context, locks jetstream.KeyValue, self string) ([]string, error) {
	keys, err := locks.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the group's members: %w", err)
	}
	var others []string
	for _, k := range keys {
		name := k
		if strings.HasPrefix(k, lockPrefix) {
			e, err := locks.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue // let go of, or lapsed, since the listing
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", k, err)
			}
			name = string(e.Value())
		}
		if name != self && !slices.Contains(others, name) {
			others = append(others, name)
		}
	}
	return others, nil
}

// lowestProgress is the offset at or below which every partition of the
// group has handled every record: the lowest progress saved, or the
// group's start for a partition that saved none.
func lowestProgress(ctx context.Context, kv jetstream.KeyValue) (low uint64, err error) {
	start, err := getUint(ctx, kv, startKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		// A group whose first member stopped before writing its start
		// handled nothing.
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := getUint(ctx, kv, partitionsKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return start, nil
	}
	if err != nil {
		return 0, err
	}
	low = math.MaxUint64
	for p := range int(n) {
		at, err := savedProgress(ctx, kv, int(n), p, start)
		if err != nil {
			return 0, err
		}
		low = min(low, at)
	}
	return low, nil
}

// progressKey is where partition n of a group of count partitions saves
// its progress. The count is in the key so that a member still running
// with an old count after the count changed never writes progress that
// the new partitions read.
func progressKey(count, n int) string {
	return offsetPrefix + strconv.Itoa(count) + "." + strconv.Itoa(n)
}

// savedProgress is partition n's saved progress, start when it saved none
// (or what it saved is not a number: reading again from the start hands
// records again, and skips none). A group made before the count was in
// the key saved it under offset.<n>, which is read when the new key is
// absent; changing the count deletes it.
func savedProgress(ctx context.Context, kv jetstream.KeyValue, count, n int, start uint64) (uint64, error) {
	for _, k := range []string{progressKey(count, n), offsetPrefix + strconv.Itoa(n)} {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", k, err)
		}
		at, err := strconv.ParseUint(string(e.Value()), 10, 64)
		if err != nil {
			return start, nil
		}
		return at, nil
	}
	return start, nil
}

// recount changes the group's partition count from n, read at revision
// rev, to this member's, once no other member is in the group: the group
// starts again at its lowest progress, with no partition's progress saved.
func (g *group) recount(ctx context.Context, n, rev uint64) error {
	others, err := otherMembers(ctx, g.locks, g.cfg.Member)
	if err != nil {
		return fmt.Errorf("consume %s: %w", g.cfg.Name, err)
	}
	if len(others) > 0 {
		return fmt.Errorf("consume %s: the group has %d partitions on this log, not %d, and %s still in it: every member must use the same count (to change it, stop every member, then start them with the new count)",
			g.cfg.Name, n, g.cfg.Partitions, strings.Join(others, ", "))
	}
	start, err := g.kv.Get(ctx, startKey)
	if err != nil {
		return fmt.Errorf("consume %s: read %s: %w", g.cfg.Name, startKey, err)
	}
	low, err := lowestProgress(ctx, g.kv)
	if err != nil {
		return fmt.Errorf("consume %s: %w", g.cfg.Name, err)
	}
	// Each step is a compare-and-set or idempotent, and the count is set
	// last: a member stopped halfway leaves a group of the old count
	// whose start is the lowest progress, which the next one to start
	// finds again.
	if _, err := g.kv.Update(ctx, startKey, []byte(strconv.FormatUint(low, 10)), start.Revision()); err != nil {
		return casErr(g.cfg.Name, err)
	}
	keys, err := g.kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return fmt.Errorf("consume %s: list the group's progress: %w", g.cfg.Name, err)
	}
	for _, k := range keys {
		if strings.HasPrefix(k, offsetPrefix) {
			if err := g.kv.Delete(ctx, k); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return fmt.Errorf("consume %s: delete %s: %w", g.cfg.Name, k, err)
			}
		}
	}
	if _, err := g.kv.Update(ctx, partitionsKey, []byte(strconv.Itoa(g.cfg.Partitions)), rev); err != nil {
		return casErr(g.cfg.Name, err)
	}
	if g.cfg.Regrouped != nil {
		g.cfg.Regrouped(fmt.Sprintf("the %s group's partitions changed from %d to %d; every partition is read again after offset %d", g.cfg.Name, n, g.cfg.Partitions, low))
	}
	return nil
}

func casErr(name string, err error) error {
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return errRegrouped
	}
	return fmt.Errorf("consume %s: %w", name, err)
}

// replaceGroup lets a reader of the whole log take the place of a
// partitioned group of its name once no member is in the group: its
// consumer is made again to start after the group's lowest progress, and
// the group's buckets are deleted. A group with members left refuses it.
func (s *JetStreamStore) replaceGroup(ctx context.Context, cfg ConsumerConfig, cc jetstream.ConsumerConfig) error {
	bucket := groupBucket(s.cfg.Stream, cfg.Name)
	kv, err := s.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("consume %s: look for a partitioned group: %w", cfg.Name, err)
	}
	n, _ := getUint(ctx, kv, partitionsKey)
	locks, err := s.js.KeyValue(ctx, bucket+"_members")
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("consume %s: look for the group's members: %w", cfg.Name, err)
	}
	if locks != nil {
		others, err := otherMembers(ctx, locks, "")
		if err != nil {
			return fmt.Errorf("consume %s: %w", cfg.Name, err)
		}
		if len(others) > 0 {
			return fmt.Errorf("consume %s: the %s readers of this log share it in %d partitions, and %s still in the group: give this one the same count (or stop them all, then start them without partitions to read the whole log)",
				cfg.Name, cfg.Name, n, strings.Join(others, ", "))
		}
	}
	low, err := lowestProgress(ctx, kv)
	if err != nil {
		return fmt.Errorf("consume %s: %w", cfg.Name, err)
	}
	// The consumer first, then the group: stopped in between, the next
	// reader finds the group and does both again, from the same progress.
	if err := s.stream.DeleteConsumer(ctx, cfg.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("consume %s: %w", cfg.Name, err)
	}
	cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, low+1
	if _, err := s.stream.CreateConsumer(ctx, cc); err != nil {
		return fmt.Errorf("consume %s: start after offset %d: %w", cfg.Name, low, err)
	}
	for _, b := range []string{bucket + "_members", bucket} {
		if err := s.js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("consume %s: delete bucket %s: %w", cfg.Name, b, err)
		}
	}
	if cfg.Regrouped != nil {
		cfg.Regrouped(fmt.Sprintf("the %s group of %d partitions gave way to one reader of the whole log, reading again after offset %d", cfg.Name, n, low))
	}
	return nil
}
