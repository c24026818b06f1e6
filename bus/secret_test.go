package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentjournal/agentjournal/bus"
	"github.com/agentjournal/agentjournal/fixtures"
)

// TestTheSecretCannotEraseTheLog: a raw client holding the NATS secret, as
// every joined daemon and anything that can read nats-secret does, tries
// each JetStream request that would make the server drop records (a limit
// of one message with discard old, a purge, a restore, the account purge,
// a rollup or TTL header on a journal subject, another stream over its
// subjects...) and the log keeps every record and its configuration. It
// still does what a joined daemon needs: append, read, consume, create a
// key-value bucket and use it.
func TestTheSecretCannotEraseTheLog(t *testing.T) {
	b := fixtures.StartNATS(t, func(c *bus.Config) { c.Listen = "127.0.0.1:0" })
	nc, js := fixtures.ConnectJetStream(t, b, b.ClientURL())
	const n = 35
	for i := range n {
		publish(t, js, testSubject, fmt.Sprintf("record %d", i), fmt.Sprintf("rec-%d", i))
	}
	ctx := t.Context()
	before, err := b.Stream().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	erase := before.Config
	erase.MaxMsgs, erase.Discard = 1, jetstream.DiscardOld
	lax := before.Config
	lax.DenyDelete, lax.DenyPurge, lax.AllowRollup, lax.AllowMsgTTL = false, false, true, true
	// A forbidden request is not answered: each attempt waits a moment.
	attempt := func(try func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return try(ctx)
	}
	raw := func(subject string, body string) func(context.Context) error {
		return func(ctx context.Context) error {
			m, err := nc.RequestWithContext(ctx, subject, []byte(body))
			if err != nil {
				return err
			}
			var answer struct {
				Error *struct{ Description string } `json:"error"`
			}
			if err := json.Unmarshal(m.Data, &answer); err != nil || answer.Error != nil {
				return fmt.Errorf("refused: %s", m.Data)
			}
			return nil
		}
	}
	for what, try := range map[string]func(context.Context) error{
		"a limit of one message, discard old": func(ctx context.Context) error { _, err := js.UpdateStream(ctx, erase); return err },
		"lifting deny-delete and deny-purge":  func(ctx context.Context) error { _, err := js.UpdateStream(ctx, lax); return err },
		"the journal stream created anew":     func(ctx context.Context) error { _, err := js.CreateStream(ctx, erase); return err },
		"a purge":                             func(ctx context.Context) error { return js.DeleteStream(ctx, b.StreamName()) },
		"the account purged":                  raw("$JS.API.ACCOUNT.PURGE.$G", ""),
		"a restore over the stream":           raw("$JS.API.STREAM.RESTORE."+b.StreamName(), `{"config":{"name":"`+b.StreamName()+`"}}`),
		"its leader stepping down":            raw("$JS.API.STREAM.LEADER.STEPDOWN."+b.StreamName(), ""),
		"a rollup header": func(ctx context.Context) error {
			m := nats.NewMsg(testSubject)
			m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupAll)
			m.Data = []byte("rolled up")
			_, err := js.PublishMsg(ctx, m)
			return err
		},
		"a TTL header": func(ctx context.Context) error {
			_, err := js.Publish(ctx, testSubject, []byte("expiring"), jetstream.WithMsgTTL(time.Second))
			return err
		},
		"another stream over its subjects": func(ctx context.Context) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SHADOW", Subjects: []string{testSubject}, MaxMsgs: 1})
			return err
		},
	} {
		if err := attempt(try); err == nil {
			t.Errorf("%s: done for a holder of the secret", what)
		}
	}
	after, err := b.Stream().Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.Msgs != n || after.State.FirstSeq != before.State.FirstSeq || after.Config.MaxMsgs != before.Config.MaxMsgs ||
		after.Config.Discard != jetstream.DiscardNew || !after.Config.DenyDelete || !after.Config.DenyPurge {
		t.Fatalf("the log after the attempts: %d records from %d, config %+v; want %d from %d, unchanged",
			after.State.Msgs, after.State.FirstSeq, after.Config, n, before.State.FirstSeq)
	}

	// What a joined daemon does still works.
	publish(t, js, testSubject, "still appends", "rec-after")
	if got, err := js.Stream(ctx, b.StreamName()); err != nil || got.CachedInfo().State.Msgs != n+1 {
		t.Fatalf("read the stream's info: %v", err)
	}
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b.StreamName() + "_probe"})
	if err != nil {
		t.Fatalf("a holder of the secret creates a bucket: %v", err)
	}
	if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	cons, err := js.OrderedConsumer(ctx, b.StreamName(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatalf("a holder of the secret consumes: %v", err)
	}
	if m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil || string(m.Data()) != "record 0" {
		t.Fatalf("first record read back: %v", err)
	}
	// The server's owner, this process, still sets the stream up.
	if _, err := b.JetStream().UpdateStream(ctx, before.Config); err != nil {
		t.Fatalf("the owner updates the stream: %v", err)
	}
}
