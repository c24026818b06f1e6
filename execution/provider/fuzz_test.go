package provider

import (
	"bytes"
	"testing"
)

// fuzzParse feeds a fuzzed stream, split into lines, to a new parser: it must
// never panic, and every event must validate as a journal record.
func fuzzParse(f *testing.F, provider string) {
	for _, c := range loadCaptures(f, provider) {
		f.Add(bytes.Join(c.lines, []byte("\n")))
		for _, l := range c.lines {
			f.Add(l)
		}
	}
	for _, seed := range []string{
		"", "\n\n", "garbage", `{"type":`, `[1,2,3]`, `null`, `{"type":"hologram"}`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/x"}}],"usage":{"input_tokens":-1,"output_tokens":9223372036854775807}}}` + "\n" +
			`{"type":"result","usage":{"input_tokens":9223372036854775807,"cache_read_input_tokens":9223372036854775807}}`,
		`{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":""}]}}`,
		`{"type":"tool.execution_start","id":"x","data":{"toolCallId":"c","toolName":"bash","arguments":{"cmd":["ls","-l"]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		parse(t, provider, bytes.Split(stream, []byte("\n"))...)
	})
}

func FuzzParseClaudeCode(f *testing.F) { fuzzParse(f, ClaudeCode) }
func FuzzParseCodex(f *testing.F)      { fuzzParse(f, Codex) }
func FuzzParseCopilot(f *testing.F)    { fuzzParse(f, Copilot) }
