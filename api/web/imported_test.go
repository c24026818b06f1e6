package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentjournal/agentjournal/api/apitest"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/journalfile"
)

// Resuming an execution whose journal was imported from a file shows the
// command and directory that file holds and runs nothing until the user
// presses "Run this command"; then the resume runs them.
func TestImportedResumeAsksFirst(t *testing.T) {
	src := apitest.Start(t, apitest.Options{})
	dir := t.TempDir()
	id := stackOf(src).launch(t, map[string]any{"ownerEntity": "Task", "ownerId": "t-imported", "agent": "generic", "dir": dir,
		"prompt": "one", "command": []string{src.Agent, "echo:1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var records []eventstore.Record
	for {
		ref, err := src.Store.Lookup(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		records = records[:0]
		final := false
		for e, err := range src.Store.ReadJournal(ctx, ref, 1) {
			if err != nil {
				t.Fatal(err)
			}
			records = append(records, e.Record)
			if st, ok := e.Record.(*eventstore.StateChanged); ok && st.Lifecycle.Final() {
				final = true
			}
		}
		if final {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the run never ended")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var file bytes.Buffer
	if err := journalfile.Write(&file, records); err != nil {
		t.Fatal(err)
	}

	s := startStack(t)
	req, _ := http.NewRequest("POST", s.url+"/v1/journals", strings.NewReader(file.String()))
	req.Header.Set("Authorization", "Bearer "+apitest.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("import: %d %s", resp.StatusCode, body)
	}

	b := newBrowser(t)
	b.signIn(t, s)
	b.openExecution(t, id)
	b.waitFor(t, 20*time.Second, "the resume card", `!document.getElementById('resume-card').hidden`)
	b.do(t, chromedp.SetValue(chromedp.CSS("#resume-prompt"), "again"))
	b.countRequests(t)
	b.click(t, "#resume-submit")
	b.waitFor(t, 20*time.Second, "the imported command shown", fmt.Sprintf(`(() => {
		const box = document.getElementById('resume-error');
		return !box.hidden && box.querySelector('[data-part="imported-dir"]')?.textContent === %q &&
			box.querySelector('[data-part="imported-command"]')?.textContent.includes('echo:1') })()`, dir))
	if got := eval[string](t, b, `location.hash`); got != "#/executions/"+id {
		t.Fatalf("the page moved to %s before the command was confirmed", got)
	}
	b.click(t, "#resume-error .confirm-imported")
	b.waitFor(t, 20*time.Second, "the resumed execution", fmt.Sprintf(`location.hash.startsWith('#/executions/') && location.hash !== '#/executions/%s'`, id))
	posts := eval[[]string](t, b, `window.requests.filter((r) => r.startsWith('POST'))`)
	if len(posts) != 2 {
		t.Errorf("resume requests %q, want the refused one and the confirmed one", posts)
	}
	b.checkNoExceptions(t)
}
