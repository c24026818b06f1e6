package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/agentjournal/agentjournal/internal/textclip"

	"github.com/agentjournal/agentjournal/eventstore"
)

// toolClass groups tool names by what calling them means for the
// execution's activity and target.
type toolClass int

const (
	toolOther  toolClass = iota // executing; the target is the tool
	toolShell                   // executing; the target is the command
	toolEdit                    // editing; the target is the file
	toolRead                    // reviewing; the target is the file
	toolSearch                  // reviewing; the target is the pattern or query, in the directory searched
	toolFetch                   // reviewing; the target is the URL
	toolPlan                    // planning; the target is the tool
)

// toolClasses knows the built-in tools of the three CLIs, by lower-case
// name. MCP and other tools fall in toolOther.
var toolClasses = map[string]toolClass{
	// Claude Code
	"bash": toolShell, "bashoutput": toolShell, "killshell": toolShell, "killbash": toolShell,
	"edit": toolEdit, "multiedit": toolEdit, "write": toolEdit, "notebookedit": toolEdit,
	"read": toolRead, "notebookread": toolRead, "ls": toolRead,
	"glob": toolSearch, "grep": toolSearch, "websearch": toolSearch,
	"webfetch":  toolFetch,
	"todowrite": toolPlan, "exitplanmode": toolPlan, "enterplanmode": toolPlan,
	// Copilot CLI
	"powershell": toolShell, "read_bash": toolShell, "write_bash": toolShell, "stop_bash": toolShell, "list_bash": toolShell,
	"read_powershell": toolShell, "write_powershell": toolShell, "stop_powershell": toolShell,
	"create": toolEdit, "str_replace_editor": toolEdit, "str_replace": toolEdit,
	"view": toolRead, "web_search": toolSearch, "web_fetch": toolFetch, "fetch": toolFetch,
	"update_todo": toolPlan, "report_intent": toolPlan,
	// Codex (function names, as seen through MCP or older tool events)
	"shell": toolShell, "exec_command": toolShell, "local_shell": toolShell,
	"apply_patch": toolEdit, "update_plan": toolPlan,
}

var pathArgs = []string{"file_path", "path", "notebook_path", "filePath", "file"}

// ToolActivity says what a call of the named tool with these arguments is
// doing: the activity and the current target. The target is the file for
// edit and read tools that name one, the command for shell tools, the
// pattern or query (and the directory) for search tools, the URL for fetch
// tools, and the tool otherwise.
func ToolActivity(name string, a map[string]json.RawMessage) (eventstore.Activity, *eventstore.Target) {
	class := toolClasses[strings.ToLower(name)]
	var act eventstore.Activity
	switch class {
	case toolShell:
		act = eventstore.ActivityExecuting
		if cmd := StringArg(a, "command", "cmd"); cmd != "" {
			return act, CommandTarget(cmd)
		}
	case toolEdit, toolRead:
		act = eventstore.ActivityEditing
		if class == toolRead {
			act = eventstore.ActivityReviewing
		}
		if p := StringArg(a, pathArgs...); p != "" {
			return act, FileTarget(p)
		}
	case toolSearch:
		act = eventstore.ActivityReviewing
		if q := StringArg(a, "pattern", "query", "glob"); q != "" {
			return act, SearchTarget(q, StringArg(a, "path", "directory", "dir"))
		}
	case toolFetch:
		act = eventstore.ActivityReviewing
		if u := StringArg(a, "url"); u != "" {
			return act, URLTarget(u)
		}
	case toolPlan:
		act = eventstore.ActivityPlanning
	default:
		act = eventstore.ActivityExecuting
	}
	return act, ToolTarget(name)
}

func CommandTarget(cmd string) *eventstore.Target {
	return &eventstore.Target{Kind: eventstore.TargetCommand, Label: textclip.Fit(cmd, MaxLabelBytes)}
}

func FileTarget(path string) *eventstore.Target {
	return &eventstore.Target{Kind: eventstore.TargetFile, Path: textclip.Fit(path, maxPathBytes)}
}

func SearchTarget(pattern, dir string) *eventstore.Target {
	return &eventstore.Target{Kind: eventstore.TargetSearch, Label: textclip.Fit(pattern, MaxLabelBytes), Path: textclip.Fit(dir, maxPathBytes)}
}

func URLTarget(url string) *eventstore.Target {
	return &eventstore.Target{Kind: eventstore.TargetURL, Label: textclip.Fit(url, MaxLabelBytes)}
}

func ToolTarget(name string) *eventstore.Target {
	if name == "" {
		return &eventstore.Target{Kind: eventstore.TargetUnknown}
	}
	return &eventstore.Target{Kind: eventstore.TargetTool, Label: textclip.Fit(name, MaxLabelBytes)}
}

// MainArg is the argument that says what a tool call does, for a question
// that asks whether to allow it: the command, the file, the URL, the
// pattern or the query.
func MainArg(a map[string]json.RawMessage) string {
	return StringArg(a, "command", "cmd", "file_path", "notebook_path", "path", "url", "pattern", "query")
}

// InputRequestID is the request id of a needs-input signal: the CLI's own
// when the journal can keep it, else one derived from it (a hash of a long
// id, the line's place for a missing one), so that a replay derives the
// same.
func InputRequestID(id, prefix, lineKey string) string {
	if NativeID(id) != "" {
		return id
	}
	if id == "" {
		return prefix + "-" + lineKey + "-request"
	}
	sum := sha256.Sum256([]byte(id))
	return "request-" + hex.EncodeToString(sum[:16])
}

// ToolInput decodes a tool's input for the runtime, which answers with it.
// Numbers keep their exact text. An input that is not an object, or too
// big for a record, is left out.
func ToolInput(raw json.RawMessage) map[string]any {
	if len(raw) == 0 || raw[0] != '{' || len(raw) > MaxToolInputBytes {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}
