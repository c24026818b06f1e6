package claude

import (
	"encoding/json"
	"strings"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/internal/textclip"
	"github.com/agentjournal/agentjournal/runtime/agent"
)

// toolActivity is agent.ToolActivity, with Claude Code's own tools that
// name no file or command told by what they carry: a Skill call by its
// skill, a Task or Agent call (a subagent) by its description, so that
// the timeline says more than tool:Task.
func toolActivity(name string, a map[string]json.RawMessage) (eventstore.Activity, *eventstore.Target) {
	act, target := agent.ToolActivity(name, a)
	if s := subject(name, a); s != "" {
		target = agent.ToolTarget(name + ": " + agent.OneLine(s, 200))
	}
	return act, target
}

// subject is what a Skill, Task or Agent call is about: the skill's name,
// the subagent's description; "" for other tools.
func subject(tool string, a map[string]json.RawMessage) string {
	switch tool {
	case "Skill":
		return agent.StringArg(a, "skill", "name", "command")
	case "Task", "Agent":
		return agent.StringArg(a, "description", "subagent_type", "prompt")
	}
	return ""
}

// permissionQuestion is the one line that asks for permission: the tool
// and its main argument (a skill's name, a subagent's description).
func permissionQuestion(tool string, a map[string]json.RawMessage) string {
	name := agent.OneLine(tool, agent.MaxTypeBytes)
	if name == "" {
		name = "an unnamed tool"
	}
	arg := agent.MainArg(a)
	if s := subject(tool, a); s != "" {
		arg = s
	}
	if arg := agent.OneLine(arg, 200); arg != "" {
		return "Allow " + name + ": " + arg + "?"
	}
	return "Allow " + name + "?"
}

// askUserQuestion reads AskUserQuestion's input: the question texts and
// the labels of their options.
func askUserQuestion(raw json.RawMessage) (string, []string) {
	var in struct {
		Questions []struct {
			Question string `json:"question"`
			Options  []struct {
				Label string `json:"label"`
			} `json:"options"`
		} `json:"questions"`
	}
	_ = json.Unmarshal(raw, &in)
	var texts, choices []string
	for _, q := range in.Questions {
		if t := strings.TrimSpace(q.Question); t != "" {
			texts = append(texts, t)
		}
		for _, o := range q.Options {
			if l := strings.TrimSpace(o.Label); l != "" && len(choices) < maxChoices {
				choices = append(choices, textclip.Fit(l, agent.MaxLabelBytes))
			}
		}
	}
	question := textclip.Fit(strings.Join(texts, "\n"), agent.MaxSummaryBytes)
	if question == "" {
		question = "Claude Code asks a question without text"
	}
	return question, choices
}

// suggested reports a non-empty permission_suggestions array: Claude Code
// then offers to remember the answer.
func suggested(raw json.RawMessage) bool {
	var v []json.RawMessage
	return len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &v) == nil && len(v) > 0
}
