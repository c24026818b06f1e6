package acp_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentjournal/agentjournal/acp"
)

// TestDecodePromptUsage reads a turn's usage from the prompt response's
// usage, or else from Gemini CLI's _meta.quota.token_count.
func TestDecodePromptUsage(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		want       *acp.Usage
	}{
		{"usage", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"inputTokens":120,"outputTokens":17,"totalTokens":137}}}`,
			&acp.Usage{Input: 120, Output: 17, Total: 137}},
		{"gemini quota", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":120,"output_tokens":17},"model_usage":[]}}}}`,
			&acp.Usage{Input: 120, Output: 17, Total: 137}},
		{"usage wins", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3},"_meta":{"quota":{"token_count":{"input_tokens":120,"output_tokens":17}}}}}`,
			&acp.Usage{Input: 1, Output: 2, Total: 3}},
		{"none", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn","_meta":{"quota":{}}}}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := acp.Decode([]byte(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if m.Result == nil {
				t.Fatalf("no result in %+v", m)
			}
			if d := cmp.Diff(tt.want, m.Result.Usage); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}
