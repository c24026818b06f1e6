package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/execution"
)

// permissionsAsk is run's --permissions value that asks the person at the
// controlling terminal.
const permissionsAsk = "ask"

// ttyPath is the controlling terminal: a person who can answer, even while
// run's own stdin and stdout are redirected. Empty means none.
var ttyPath = "/dev/tty"

// terminalAsker asks an agent's questions and permission requests at the
// controlling terminal, one at a time.
type terminalAsker struct {
	mu sync.Mutex
	// keys, when set, reads the terminal already (an interactive run
	// passing keys through to the agent): the answer is read through it.
	keys lineReader
}

// lineReader reads the next line typed at the terminal. ok is false when
// done is closed first, or no line came.
type lineReader interface {
	readLine(done <-chan struct{}) (line string, ok bool)
}

// available reports whether run has a controlling terminal to ask at.
func (a *terminalAsker) available() bool {
	if ttyPath == "" {
		return false
	}
	f, err := os.OpenFile(ttyPath, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// ask shows q at the terminal and returns the answer typed there: one of
// a permission request's choices, the text (or the choice its number
// names) for a question. ok is false when there is no terminal, or done was
// closed first (the request was answered elsewhere, the agent ended, or
// run was interrupted).
func (a *terminalAsker) ask(q *eventstore.NeedsInputSignal, done <-chan struct{}) (answer string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tty, err := os.OpenFile(ttyPath, os.O_RDWR, 0)
	if err != nil {
		return "", false
	}
	var once sync.Once
	closeTTY := func() { once.Do(func() { tty.Close() }) }
	defer closeTTY()

	permission := q.Kind == string(eventstore.InputPermission)
	// Each line is made terminal-safe on its own: the agent's words must
	// not move the cursor, but the lines between them must break.
	var lines []string
	switch {
	case permission && q.Tool != nil:
		lines = append(lines, fmt.Sprintf("The agent asks permission to run %s (%s): %s", q.Tool.Name, q.RequestID, q.Question))
	case permission:
		lines = append(lines, fmt.Sprintf("The agent asks permission (%s): %s", q.RequestID, q.Question))
	default:
		lines = append(lines, fmt.Sprintf("The agent asks (%s): %s", q.RequestID, q.Question))
	}
	for i, c := range q.Choices {
		lines = append(lines, fmt.Sprintf("  %d. %s", i+1, c))
	}
	prompt := "Your answer: "
	if permission {
		prompt = "Your answer (a number or a choice; y allows once, anything else denies): "
	} else if len(q.Choices) > 0 {
		prompt = "Your answer (a number picks that choice): "
	}
	var b strings.Builder
	b.WriteString("\r\n")
	for _, l := range lines {
		b.WriteString(termSafe(l) + "\r\n")
	}
	io.WriteString(tty, b.String()+prompt)

	if a.keys != nil {
		s, read := a.keys.readLine(done)
		if !read {
			io.WriteString(tty, "\r\n(not answered here)\r\n")
			return "", false
		}
		return interpret(q, s, permission), true
	}
	line := make(chan string, 1)
	go func() {
		s, err := bufio.NewReader(tty).ReadString('\n')
		if err != nil && s == "" {
			close(line)
			return
		}
		line <- strings.TrimRight(s, "\r\n")
	}()
	select {
	case s, read := <-line:
		if !read {
			return "", false
		}
		return interpret(q, s, permission), true
	case <-done:
		// Closing the terminal ends the read.
		io.WriteString(tty, "\n(not answered here: answered elsewhere, or the agent ended)\n")
		closeTTY()
		return "", false
	}
}

// interpret turns what was typed into the answer sent to the agent: the
// choice a number or a choice's text names, as the runtime reads any
// answer (execution.InputRequest.Choice); for a permission, y or yes is
// allow, and anything else a denial.
func interpret(q *eventstore.NeedsInputSignal, typed string, permission bool) string {
	typed = strings.TrimSpace(typed)
	answer := execution.InputRequest{Choices: q.Choices}.Choice(typed)
	if !permission {
		return answer
	}
	switch {
	case slices.Contains(q.Choices, answer):
		return answer
	case strings.EqualFold(typed, "y"), strings.EqualFold(typed, "yes"), strings.EqualFold(typed, eventstore.AnswerAllow):
		return eventstore.AnswerAllow
	}
	return eventstore.AnswerDeny
}
