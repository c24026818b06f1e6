package provider

import "testing"

// benchmarkParse parses every capture of a provider, each with a new parser
// as a launch would, and reports throughput over the capture bytes.
func benchmarkParse(b *testing.B, provider string) {
	captures := loadCaptures(b, provider)
	size := 0
	for _, c := range captures {
		for _, l := range c.lines {
			size += len(l) + 1
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range captures {
			p, _ := New(provider, testPrefix)
			for _, l := range c.lines {
				p.Parse(l)
			}
		}
	}
}

func BenchmarkParseClaudeCode(b *testing.B) { benchmarkParse(b, ClaudeCode) }
func BenchmarkParseCodex(b *testing.B)      { benchmarkParse(b, Codex) }
func BenchmarkParseCopilot(b *testing.B)    { benchmarkParse(b, Copilot) }
