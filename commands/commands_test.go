package commands_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/commands"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/google/go-cmp/cmp"
)

var (
	prompt    = eventstore.MessageDescriptor{Type: "prompt", Label: "Prompt", Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	answer    = eventstore.MessageDescriptor{Type: "answer", Label: "Answer", Delivery: eventstore.DeliveryRequired, MutatesContext: true, Portability: eventstore.PortabilityCrossAgent}
	interrupt = eventstore.MessageDescriptor{Type: "interrupt", Label: "Interrupt", Delivery: eventstore.DeliveryBestEffort, Portability: eventstore.PortabilityCrossAgent}
	compact   = eventstore.MessageDescriptor{Type: "compact", Label: "Compact", Delivery: eventstore.DeliveryBestEffort, MutatesContext: true,
		Portability: eventstore.PortabilityAdapterScoped, AdapterID: "claude-code"}
	otherAdapter = eventstore.MessageDescriptor{Type: "plan-mode", Label: "Plan mode", Delivery: eventstore.DeliveryBestEffort,
		Portability: eventstore.PortabilityAdapterScoped, AdapterID: "codex"}
	terminalOnly = eventstore.MessageDescriptor{Type: "login", Label: "Login", Delivery: eventstore.DeliveryNoneMode, Portability: eventstore.PortabilityTerminalOnly}
)

func claudeView() commands.View {
	return commands.View{ExecutionID: "ex-1", AgentID: "claude-code", Posture: eventstore.PostureStructuredInteractive, TerminalAttached: true,
		Messages: []eventstore.MessageDescriptor{prompt, answer, interrupt, compact, otherAdapter, terminalOnly}, WorkingDirectory: "/work/tree"}
}

func headlessView() commands.View {
	return commands.View{ExecutionID: "ex-2", AgentID: "generic", Posture: eventstore.PostureStructuredHeadless,
		Messages: []eventstore.MessageDescriptor{prompt, interrupt}, WorkingDirectory: "/work/tree"}
}

func TestResolveCategories(t *testing.T) {
	waiting := claudeView()
	waiting.CurrentInputRequestID = "req-7"
	tests := []struct {
		name  string
		view  commands.View
		text  string
		focus commands.Focus
		want  commands.Invocation
	}{
		{"checkpoint without title", claudeView(), "/checkpoint", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpCheckpoint, Command: "checkpoint",
			Portability: eventstore.PortabilityMissionNative, Text: "/checkpoint", Records: "checkpoint.created"}},
		{"checkpoint with title", claudeView(), "  /checkpoint before the refactor ", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpCheckpoint, Command: "checkpoint",
			Portability: eventstore.PortabilityMissionNative, Text: "  /checkpoint before the refactor ", Records: "checkpoint.created", Title: "before the refactor"}},
		{"blocked", claudeView(), "/blocked waiting for the API key", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpBlocked, Command: "blocked",
			Portability: eventstore.PortabilityMissionNative, Text: "/blocked waiting for the API key", Records: "observation.recorded", Reason: "waiting for the API key"}},
		{"blocked over lines", claudeView(), "/blocked\nno key", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpBlocked, Command: "blocked",
			Portability: eventstore.PortabilityMissionNative, Text: "/blocked\nno key", Records: "observation.recorded", Reason: "no key"}},
		{"read", claudeView(), "/read ./docs/../README.md", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpContext, Command: "read",
			Portability: eventstore.PortabilityMissionNative, Text: "/read ./docs/../README.md", Records: "message.accepted",
			MessageType: "prompt", Delivery: eventstore.DeliveryRequired, MutatesContext: true, Path: "README.md"}},
		{"attach", claudeView(), "/attach api/server.go", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpContext, Command: "attach",
			Portability: eventstore.PortabilityMissionNative, Text: "/attach api/server.go", Records: "message.accepted",
			MessageType: "prompt", Delivery: eventstore.DeliveryRequired, MutatesContext: true, Path: "api/server.go"}},
		{"verify", headlessView(), "/verify", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpVerify, Command: "verify",
			Portability: eventstore.PortabilityMissionNative, Text: "/verify", Records: "owner-effect.recorded"}},
		{"summarize-diff", headlessView(), "/summarize-diff", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategorySemanticOperation, Operation: commands.OpSummarizeDiff, Command: "summarize-diff",
			Portability: eventstore.PortabilityMissionNative, Text: "/summarize-diff", Records: "observation.recorded"}},
		{"impact", headlessView(), "/impact eventstore.Append", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategorySemanticOperation, Operation: commands.OpImpact, Command: "impact",
			Portability: eventstore.PortabilityMissionNative, Text: "/impact eventstore.Append", Records: "observation.recorded", Symbol: "eventstore.Append"}},
		{"mission-native wins in the terminal lane", claudeView(), "/verify", commands.FocusTerminal, commands.Invocation{
			Category: commands.CategoryEntityCommand, Operation: commands.OpVerify, Command: "verify",
			Portability: eventstore.PortabilityMissionNative, Text: "/verify", Records: "owner-effect.recorded"}},
		{"cross-agent prompt", headlessView(), "/prompt fix the test", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpMessage, Command: "prompt",
			Portability: eventstore.PortabilityCrossAgent, Text: "/prompt fix the test", Records: "message.accepted",
			MessageType: "prompt", Payload: json.RawMessage(`{"text":"fix the test"}`), Delivery: eventstore.DeliveryRequired, MutatesContext: true}},
		{"cross-agent interrupt", headlessView(), "/interrupt", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpMessage, Command: "interrupt",
			Portability: eventstore.PortabilityCrossAgent, Text: "/interrupt", Records: "message.accepted",
			MessageType: "interrupt", Delivery: eventstore.DeliveryBestEffort}},
		{"answer names the open request", waiting, "/answer yes", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpMessage, Command: "answer",
			Portability: eventstore.PortabilityCrossAgent, Text: "/answer yes", Records: "message.accepted",
			MessageType: "answer", Payload: json.RawMessage(`{"requestId":"req-7","text":"yes"}`), Delivery: eventstore.DeliveryRequired, MutatesContext: true}},
		{"adapter-scoped of its own adapter", claudeView(), "/compact keep the plan", commands.FocusPrompt, commands.Invocation{
			Category: commands.CategoryAgentMessage, Operation: commands.OpMessage, Command: "compact",
			Portability: eventstore.PortabilityAdapterScoped, AdapterID: "claude-code", Text: "/compact keep the plan", Records: "message.accepted",
			MessageType: "compact", Payload: json.RawMessage(`{"text":"keep the plan"}`), Delivery: eventstore.DeliveryBestEffort, MutatesContext: true}},
		{"terminal-only hint with terminal focus", claudeView(), "/doctor", commands.FocusTerminal, commands.Invocation{
			Category: commands.CategoryTerminalInput, Operation: commands.OpTerminalInput, Command: "doctor",
			Portability: eventstore.PortabilityTerminalOnly, Text: "/doctor", Records: "none", Input: "/doctor\r"}},
		{"terminal-only descriptor with terminal focus", claudeView(), "/login", commands.FocusTerminal, commands.Invocation{
			Category: commands.CategoryTerminalInput, Operation: commands.OpTerminalInput, Command: "login",
			Portability: eventstore.PortabilityTerminalOnly, Text: "/login", Records: "none", Input: "/login\r"}},
		{"plain text in the terminal lane", claudeView(), "y\n", commands.FocusTerminal, commands.Invocation{
			Category: commands.CategoryTerminalInput, Operation: commands.OpTerminalInput,
			Portability: eventstore.PortabilityTerminalOnly, Text: "y\n", Records: "none", Input: "y\r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commands.Resolve(tt.view, tt.text, tt.focus)
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.text, err)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	noTree := headlessView()
	noTree.WorkingDirectory = ""
	noPrompt := headlessView()
	noPrompt.Messages = []eventstore.MessageDescriptor{interrupt}
	tests := []struct {
		name         string
		view         commands.View
		text         string
		focus        commands.Focus
		wantReason   string
		wantExpected string
	}{
		{"empty", claudeView(), "   ", commands.FocusPrompt, "the command is empty", "/name [arguments]"},
		{"no slash in the prompt box", claudeView(), "hello", commands.FocusPrompt, `"hello" does not start with /`, "plain text is a prompt message"},
		{"bad name", claudeView(), "/!bang", commands.FocusPrompt, `"/!bang" is not a command name`, "a letter or digit"},
		{"lone slash", claudeView(), "/", commands.FocusPrompt, `"/" is not a command name`, "a letter or digit"},
		{"unknown command lists the offered ones", headlessView(), "/frobnicate", commands.FocusPrompt, "unknown command /frobnicate for execution ex-2",
			"one of: /checkpoint, /blocked, /read, /attach, /verify, /summarize-diff, /impact, /prompt, /interrupt"},
		{"unknown command hints the terminal lane", claudeView(), "/doctor", commands.FocusPrompt, "unknown command /doctor", "goes to the terminal lane (focus terminal)"},
		{"adapter-scoped of another adapter", claudeView(), "/plan-mode", commands.FocusPrompt, "unknown command /plan-mode", "one of:"},
		{"terminal-only descriptor in the prompt box", claudeView(), "/login", commands.FocusPrompt, "/login is terminal-only", "type it in the terminal lane"},
		{"terminal focus without a terminal", headlessView(), "/doctor", commands.FocusTerminal, "execution ex-2 has no terminal lane (posture structured-headless)", "raw input needs"},
		{"blocked without reason", claudeView(), "/blocked", commands.FocusPrompt, "/blocked needs a reason", "/blocked <reason>"},
		{"verify with arguments", claudeView(), "/verify now", commands.FocusPrompt, `/verify takes no arguments, got "now"`, "/verify"},
		{"summarize-diff with arguments", claudeView(), "/summarize-diff HEAD", commands.FocusPrompt, "/summarize-diff takes no arguments", "/summarize-diff"},
		{"checkpoint title over lines", claudeView(), "/checkpoint a\nb", commands.FocusPrompt, "title spans lines", "/checkpoint [title]"},
		{"checkpoint title too long", claudeView(), "/checkpoint " + strings.Repeat("x", 201), commands.FocusPrompt, "title is 201 bytes", "at most 200 bytes"},
		{"read without path", claudeView(), "/read", commands.FocusPrompt, "/read needs a path", "/read <path>"},
		{"read absolute path", claudeView(), "/read /etc/passwd", commands.FocusPrompt, `path "/etc/passwd" is absolute`, "inside it"},
		{"attach escaping path", claudeView(), "/attach docs/../../secret", commands.FocusPrompt, "leaves the working directory", "/attach <path>"},
		{"read without prompt descriptor", noPrompt, "/read a.go", commands.FocusPrompt, "declares none", "takes prompt messages"},
		{"impact without tree", noTree, "/impact Foo", commands.FocusPrompt, "has no working directory", "working directory"},
		{"impact without symbol", claudeView(), "/impact", commands.FocusPrompt, "/impact needs a symbol", "/impact <symbol>"},
		{"impact with two words", claudeView(), "/impact foo bar", commands.FocusPrompt, `"foo bar" is not a symbol`, "one identifier"},
		{"prompt without text", claudeView(), "/prompt", commands.FocusPrompt, "/prompt needs text", "/prompt <text>"},
		{"answer with nothing open", claudeView(), "/answer yes", commands.FocusPrompt, "no open input request", "/answer <text>"},
		{"too long", claudeView(), "/blocked " + strings.Repeat("x", commands.MaxText), commands.FocusPrompt, "bytes", "at most 65536 bytes"},
		{"not UTF-8", claudeView(), "/blocked \xff", commands.FocusPrompt, "not valid UTF-8", "UTF-8 text"},
		{"NUL", claudeView(), "/blocked a\x00b", commands.FocusPrompt, "NUL byte", "without NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := commands.Resolve(tt.view, tt.text, tt.focus)
			var pe *commands.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Resolve(%q) = %+v, %v; want a *ParseError", tt.text, got, err)
			}
			if !strings.Contains(pe.Reason, tt.wantReason) {
				t.Errorf("reason %q, want it to contain %q", pe.Reason, tt.wantReason)
			}
			if !strings.Contains(pe.Expected, tt.wantExpected) {
				t.Errorf("expected %q, want it to contain %q", pe.Expected, tt.wantExpected)
			}
			if pe.Text != tt.text {
				t.Errorf("text %q, want %q", pe.Text, tt.text)
			}
		})
	}
}

func labels(cs []commands.Completion) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Label+":"+string(c.Portability))
	}
	return out
}

func TestCompleteFiltersByPostureAndAdapter(t *testing.T) {
	waiting := claudeView()
	waiting.CurrentInputRequestID = "req-1"
	codex := claudeView()
	codex.AgentID = "codex"
	noTree := headlessView()
	noTree.WorkingDirectory = ""
	headlessTerminalOnly := headlessView()
	headlessTerminalOnly.Messages = append(headlessTerminalOnly.Messages, terminalOnly)
	mission := []string{"/checkpoint:mission-native", "/blocked:mission-native", "/read:mission-native", "/attach:mission-native",
		"/verify:mission-native", "/summarize-diff:mission-native", "/impact:mission-native"}
	tests := []struct {
		name   string
		view   commands.View
		prefix string
		focus  commands.Focus
		want   []string
	}{
		{"claude prompt box: own adapter only, no terminal-only, no answer without a request", claudeView(), "/", commands.FocusPrompt,
			append(append([]string{}, mission...), "/prompt:cross-agent", "/interrupt:cross-agent", "/compact:adapter-scoped")},
		{"claude terminal lane adds terminal-only", claudeView(), "", commands.FocusTerminal,
			append(append([]string{}, mission...), "/prompt:cross-agent", "/interrupt:cross-agent", "/compact:adapter-scoped", "/login:terminal-only")},
		{"answer offered while a request is open", waiting, "/an", commands.FocusPrompt, []string{"/answer:cross-agent"}},
		{"another adapter sees its own", codex, "/p", commands.FocusPrompt, []string{"/prompt:cross-agent", "/plan-mode:adapter-scoped"}},
		{"headless never offers terminal-only", headlessTerminalOnly, "/lo", commands.FocusTerminal, []string{}},
		{"no work tree: no tree commands", noTree, "/", commands.FocusPrompt,
			[]string{"/checkpoint:mission-native", "/blocked:mission-native", "/verify:mission-native", "/prompt:cross-agent", "/interrupt:cross-agent"}},
		{"prefix, any case", claudeView(), "/CH", commands.FocusPrompt, []string{"/checkpoint:mission-native"}},
		{"prefix matching nothing", claudeView(), "/zz", commands.FocusPrompt, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, labels(commands.Complete(tt.view, tt.prefix, tt.focus))); diff != "" {
				t.Errorf("Complete(%q) (-want +got):\n%s", tt.prefix, diff)
			}
		})
	}
}

func TestCompletionFields(t *testing.T) {
	cs := commands.Complete(claudeView(), "/", commands.FocusPrompt)
	byLabel := map[string]commands.Completion{}
	for _, c := range cs {
		byLabel[c.Label] = c
		if c.InputShape == "" || c.Category == "" || c.Portability == "" {
			t.Errorf("%s lacks shape, category or portability: %+v", c.Label, c)
		}
	}
	if c := byLabel["/compact"]; c.AdapterID != "claude-code" || c.Category != commands.CategoryAgentMessage {
		t.Errorf("/compact = %+v, want an agent-message of adapter claude-code", c)
	}
	if c := byLabel["/impact"]; c.InputShape != "/impact <symbol>" || c.Category != commands.CategorySemanticOperation || c.Description == "" {
		t.Errorf("/impact = %+v, want a described semantic operation with shape /impact <symbol>", c)
	}
}

func TestParseFocus(t *testing.T) {
	for in, want := range map[string]commands.Focus{"": commands.FocusPrompt, "prompt": commands.FocusPrompt, "terminal": commands.FocusTerminal} {
		if got, err := commands.ParseFocus(in); err != nil || got != want {
			t.Errorf("ParseFocus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := commands.ParseFocus("pty"); err == nil || !strings.Contains(err.Error(), "want one of: prompt, terminal") {
		t.Errorf("ParseFocus(pty) = %v, want an error naming prompt and terminal", err)
	}
}

// FuzzResolve: any text resolves to exactly one invocation or a parse
// error naming what is expected, never both, never a panic; terminal input
// only with terminal focus.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"/checkpoint x", "/read ../a", "/impact a.b", "/answer y", "/compact", "/doctor", "plain", "/", "", "/blocked\n\nr", "/attach \\x"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, term bool) {
		focus := commands.FocusPrompt
		if term {
			focus = commands.FocusTerminal
		}
		v := claudeView()
		v.CurrentInputRequestID = "req-1"
		inv, err := commands.Resolve(v, text, focus)
		if (inv == nil) == (err == nil) {
			t.Fatalf("Resolve(%q) = %v, %v: want exactly one", text, inv, err)
		}
		if err != nil {
			var pe *commands.ParseError
			if !errors.As(err, &pe) || pe.Reason == "" || pe.Expected == "" {
				t.Fatalf("Resolve(%q) error %v: want a ParseError with reason and expected shape", text, err)
			}
			return
		}
		if inv.Category == commands.CategoryTerminalInput && focus != commands.FocusTerminal {
			t.Fatalf("Resolve(%q) gave terminal input in the prompt box", text)
		}
		if inv.Path != "" && (strings.HasPrefix(inv.Path, "/") || inv.Path == ".." || strings.HasPrefix(inv.Path, "../")) {
			t.Fatalf("Resolve(%q) path %q leaves the work tree", text, inv.Path)
		}
		if inv.Payload != nil && !json.Valid(inv.Payload) {
			t.Fatalf("Resolve(%q) payload %s is not JSON", text, inv.Payload)
		}
	})
}
