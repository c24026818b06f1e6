package provider

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// benchmarkParse parses the real captures of a provider (testdata/<provider>/
// real), each with a new parser as a launch would, and decodes the same
// lines with a raw json.Unmarshal into map[string]any beside it, the floor
// of any reading of them. It reports both rates in lines/s and the ratio of
// the parse time to the raw decode time; ns/op covers both passes.
func benchmarkParse(b *testing.B, provider string) {
	var captures [][][]byte
	lines, size := 0, 0
	for _, c := range loadCaptures(b, provider) {
		if !strings.HasPrefix(c.name, "real/") {
			continue
		}
		captures = append(captures, c.lines)
		for _, l := range c.lines {
			lines++
			size += len(l) + 1
		}
	}
	if lines == 0 {
		b.Fatalf("no real captures for %s", provider)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	var parse, raw time.Duration
	for b.Loop() {
		start := time.Now()
		for _, c := range captures {
			p, _ := New(provider, testPrefix)
			for _, l := range c {
				p.Parse(l)
			}
		}
		parse += time.Since(start)
		start = time.Now()
		for _, c := range captures {
			for _, l := range c {
				var v map[string]any
				_ = json.Unmarshal(l, &v)
			}
		}
		raw += time.Since(start)
	}
	n := float64(b.N) * float64(lines)
	b.ReportMetric(n/parse.Seconds(), "lines/s")
	b.ReportMetric(n/raw.Seconds(), "json-lines/s")
	b.ReportMetric(parse.Seconds()/raw.Seconds(), "parse/json")
}

func BenchmarkParseClaudeCode(b *testing.B) { benchmarkParse(b, ClaudeCode) }
func BenchmarkParseCodex(b *testing.B)      { benchmarkParse(b, Codex) }
func BenchmarkParseCopilot(b *testing.B)    { benchmarkParse(b, Copilot) }
