package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentjournal/agentjournal/eventstore/storebench"
)

// BenchCommand measures the journal store against raw JetStream.
type BenchCommand struct {
	env *Env
}

var benchSpec = cmdSpec{
	Name: "bench",
	Args: "[--records N] [--read-records N] [--journals N] [--writers N] [--payload BYTES] [--json]",
	Summary: `Measure the journal store against raw JetStream in one process and one run:
acknowledged single-writer appends (sync always and sync interval) against raw
publishes of the same bytes, appends across many journals from many writers,
reading one journal against a raw ordered consumer, and a scan of the whole log.
Each line gives records/s for the store and for the raw baseline measured right
beside it, their ratio and the target ratio where there is one. Each figure is
the median of several rounds. The servers run in scratch directories under the
data directory and are removed afterwards; the data directory's own journals are
not touched.`,
	Example: "agentjournal --data /tmp/bench bench\nagentjournal bench --records 20000 --json",
}

// Run implements Command.
func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	fs := benchSpec.newFlagSet()
	d := storebench.DefaultConfig()
	records := fs.Int("records", d.Records, "records per append measurement `N`")
	readRecords := fs.Int("read-records", d.ReadRecords, "records in the journal read back `N`")
	journals := fs.Int("journals", d.Journals, "journals in the many-writer measurement `N`")
	writers := fs.Int("writers", d.Writers, "concurrent writers `N`")
	payload := fs.Int("payload", d.PayloadBytes, "approximate record payload `BYTES`")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := benchSpec.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return benchSpec.usageErr(fs, "unexpected argument %q (bench takes only flags)", pos[0])
	}
	if err := os.MkdirAll(c.env.DataDir, 0o700); err != nil {
		return err
	}
	scratch, err := os.MkdirTemp(c.env.DataDir, "bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cfg := storebench.Config{Dir: scratch, Records: *records, ReadRecords: *readRecords, Journals: *journals,
		Writers: *writers, PayloadBytes: *payload, Progress: c.env.Stderr}
	if err := cfg.Validate(); err != nil {
		return benchSpec.usageErr(fs, "%v", err)
	}
	rep, err := storebench.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if *asJSON {
		return rep.WriteJSON(c.env.Stdout)
	}
	return rep.WriteText(c.env.Stdout)
}
