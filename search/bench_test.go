package search_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/eventstore/storetest"
	"github.com/agentjournal/agentjournal/internal/benchkit"
	"github.com/agentjournal/agentjournal/projections"
	"github.com/agentjournal/agentjournal/search"
)

var full = flag.Bool("search.full", false, "TestMeasure runs over 1,000,000 records and prints the report")

// TestMeasure writes a generated log, then measures the search index's
// build rate against the read models' catch-up of the same log, and the
// latency of queries on the built index. It runs small by default; with
// -search.full over 1,000,000 records.
func TestMeasure(t *testing.T) {
	records, journals, queries := 20_000, 40, 200
	if *full {
		records, journals, queries = 1_000_000, 2000, 1000
	}
	s := startLog(t)
	ctx := context.Background()
	writeLog(t, s, records, journals)
	last, err := s.LastOffset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// Baseline: the read models catching up with the same log.
	db, err := projections.Open(projections.DefaultConfig(filepath.Join(dir, "projections.db")))
	if err != nil {
		t.Fatal(err)
	}
	projTook, err := benchkit.Timed(func() error { return db.CatchUp(ctx, s, nil) })
	if err != nil {
		t.Fatal(err)
	}
	// The lifecycle filter reads the read models, as the API does.
	defer db.Close()

	x, err := search.Open(filepath.Join(dir, "search"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	indexTook, err := benchkit.Timed(func() error { return x.CatchUp(ctx, s) })
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := x.Checkpoint(); cp != last {
		t.Fatalf("index checkpoint %d, want %d", cp, last)
	}

	rng := rand.New(rand.NewPCG(2, 3))
	kinds := []struct {
		name string
		make func() (search.Query, error)
	}{
		{"one word", func() (search.Query, error) { return search.Query{Text: word(rng)}, nil }},
		{"two words", func() (search.Query, error) { return search.Query{Text: word(rng) + " " + word(rng)}, nil }},
		{"phrase", func() (search.Query, error) { return search.Query{Text: `"` + word(rng) + " " + word(rng) + `"`}, nil }},
		{"word + owner + since", func() (search.Query, error) {
			return search.Query{Text: word(rng), OwnerEntity: "Task", Since: start.Add(10 * time.Minute)}, nil
		}},
		{"word + lifecycle", func() (search.Query, error) {
			list, err := db.List(projections.Filter{Lifecycle: eventstore.LifecycleCompleted})
			ids := make([]string, 0, len(list))
			for _, e := range list {
				ids = append(ids, e.ID)
			}
			return search.Query{Text: word(rng), Executions: ids}, err
		}},
	}
	rows := [][]string{{"measure", "records", "took", "records/s", "ratio"}}
	rows = append(rows,
		[]string{"projections/catch-up (baseline)", fmt.Sprint(last), projTook.Round(time.Millisecond).String(), fmt.Sprintf("%.0f", benchkit.Rate(int(last), projTook)), "1.00"},
		[]string{"search/index-build", fmt.Sprint(last), indexTook.Round(time.Millisecond).String(), fmt.Sprintf("%.0f", benchkit.Rate(int(last), indexTook)),
			fmt.Sprintf("%.2f", benchkit.Rate(int(last), indexTook)/benchkit.Rate(int(last), projTook))})
	var text strings.Builder
	benchkit.WriteTable(&text, rows, 0)
	text.WriteString("\n")
	qrows := [][]string{{"query", "n", "p50", "p99", "mean hits"}}
	for _, k := range kinds {
		var lat []time.Duration
		var hits uint64
		for range queries {
			q, err := k.make()
			if err != nil {
				t.Fatal(err)
			}
			var res *search.Result
			d, err := benchkit.Timed(func() (err error) { res, err = x.Search(q); return err })
			if err != nil {
				t.Fatal(err)
			}
			lat = append(lat, d)
			hits += res.Total
		}
		qrows = append(qrows, []string{k.name, fmt.Sprint(queries), benchkit.Percentile(lat, 0.5).Round(time.Microsecond).String(), benchkit.Percentile(lat, 0.99).Round(time.Microsecond).String(),
			fmt.Sprint(hits / uint64(queries))})
	}
	benchkit.WriteTable(&text, qrows, 0)
	t.Logf("%s, %d records in %d journals\n%s", benchkit.Here(), last, journals, text.String())
	if res, err := x.Search(search.Query{Text: vocabulary[1]}); err != nil || res.Total == 0 {
		t.Fatalf("a word of the log finds nothing: %v", err)
	}
}

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// vocabulary is the words generated texts draw from: a few common ones
// and many rare ones, as prose has.
var vocabulary = func() []string {
	common := strings.Fields("test fails in handler session login build deploy schema migrate parser config timeout retry cache token database request response error fix review")
	out := append([]string{}, common...)
	for i := range 5000 {
		out = append(out, fmt.Sprintf("w%04dx", i))
	}
	return out
}()

// word picks common words more often than rare ones.
func word(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return vocabulary[r.IntN(21)]
	}
	return vocabulary[r.IntN(len(vocabulary))]
}

func sentence(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = word(r)
	}
	return strings.Join(ws, " ")
}

// writeLog writes records records over journals journals, several at once,
// each journal in atomic batches of its own records (sequences, ids and
// times set), a mix of the kinds a real log holds, text and not.
func writeLog(t *testing.T, s *eventstore.JetStreamStore, records, journals int) {
	t.Helper()
	per := records / journals
	owners := eventstore.OwnerEntities
	var wg sync.WaitGroup
	errs := make(chan error, journals)
	sem := make(chan struct{}, 16)
	for j := range journals {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ref, err := eventstore.NewReference(owners[j%len(owners)], fmt.Sprint("o-", j%50), fmt.Sprintf("bench-%05d", j))
			if err != nil {
				errs <- err
				return
			}
			r := rand.New(rand.NewPCG(uint64(j), 1))
			at := start.Add(time.Duration(j) * time.Minute)
			var batch []eventstore.Record
			put := func(rec eventstore.Record, key string) {
				b := rec.RecordBase()
				b.Sequence = uint64(len(batch)) + 1
				at = at.Add(time.Second)
				b.OccurredAt = at
				if key != "" {
					b.RecordID = eventstore.RecordID(ref.JournalID, rec.Kind(), key)
				}
				batch = append(batch, rec)
			}
			put(storetest.Header(fmt.Sprint("agent-", j%7)), "")
			for i := 1; len(batch) < per; i++ {
				switch i % 8 {
				case 0:
					put(&eventstore.MessageAccepted{MessageID: fmt.Sprint("m-", i), Source: eventstore.SourceOperator, MessageType: "prompt",
						Payload: []byte(fmt.Sprintf(`{"text":%q}`, sentence(r, 12)))}, "")
				case 1:
					put(&eventstore.MessageDelivery{MessageID: fmt.Sprint("m-", i-1), Status: eventstore.DeliveryDelivered, Transport: eventstore.TransportPTY}, "")
				case 2:
					put(observe(fmt.Sprint("o-", i), &eventstore.MessageSignal{Text: sentence(r, 30)}), "")
				case 3:
					put(&eventstore.Decision{DecisionID: fmt.Sprint("d-", i), ObservationID: fmt.Sprint("o-", i-1), Action: eventstore.ActionRecordOnly}, "")
				case 4:
					put(&eventstore.ActivityUpdated{Activity: eventstore.ActivityExecuting,
						CurrentTarget: &eventstore.Target{Kind: eventstore.TargetFile, Path: fmt.Sprintf("src/%s/%s.go", word(r), word(r))}}, fmt.Sprint("a-", i))
				case 5:
					put(observe(fmt.Sprint("o-", i), &eventstore.NeedsInputSignal{RequestID: fmt.Sprint("r-", i), Question: sentence(r, 10) + "?", Choices: []string{word(r), word(r)}}), "")
				case 6:
					put(observe(fmt.Sprint("o-", i), &eventstore.PlanSignal{Items: []eventstore.PlanItem{
						{Text: sentence(r, 5), Status: eventstore.PlanItemOpen}, {Text: sentence(r, 5), Status: eventstore.PlanItemDone}}}), "")
				default:
					put(&eventstore.StateChanged{Activity: eventstore.ActivityReasoning}, fmt.Sprint("s-", i))
				}
			}
			sc := &eventstore.StateChanged{Lifecycle: []eventstore.Lifecycle{eventstore.LifecycleCompleted, eventstore.LifecycleFailed}[j%2], Attention: eventstore.AttentionNone}
			batch[len(batch)-1] = sc
			sc.Sequence, sc.OccurredAt, sc.RecordID = uint64(len(batch)), at, eventstore.RecordID(ref.JournalID, sc.Kind(), "end")
			for len(batch) > 0 {
				n := min(len(batch), 500)
				if err := s.AppendBatch(context.Background(), ref, batch[:n]); err != nil {
					errs <- fmt.Errorf("%s: %w", ref, err)
					return
				}
				batch = batch[n:]
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
