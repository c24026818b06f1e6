package workspace_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentjournal/agentjournal/fixtures"
)

// gitEnv is the test's own git environment: no inherited GIT_* variable, a
// fixed identity, and no optional locks, so that reading status never
// rewrites the index the tests compare byte for byte.
func gitEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=user", "GIT_AUTHOR_EMAIL=user@example.com",
		"GIT_COMMITTER_NAME=user", "GIT_COMMITTER_EMAIL=user@example.com")
	return append(env, extra...)
}

// run runs git in dir and returns its stdout; a failure fails the test.
func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return runEnv(t, dir, nil, args...)
}

func runEnv(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out)
}

// newRepo makes an empty repository on branch main in a temporary directory.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	run(t, t.TempDir(), "init", "-q", "-b", "main", dir)
	return dir
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	fixtures.WriteFiles(t, dir, map[string]string{name: content})
}

// userState is everything of a repository a snapshot must leave alone.
type userState struct {
	Status string                       // git status --porcelain=v2, ignored files included
	Index  []byte                       // the index file's bytes (nil when there is none)
	Head   string                       // .git/HEAD's bytes
	Stash  string                       // git stash list
	Refs   string                       // every ref outside refs/agentjournal/ and its object
	Files  map[string]fixtures.TreeFile // the working files, ignored ones included
	Config map[string]string            // .git/config
}

func stateOf(t testing.TB, dir string) userState {
	t.Helper()
	var s userState
	s.Status = run(t, dir, "status", "--porcelain=v2", "--branch", "--untracked-files=all", "--ignored")
	idx, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	s.Index = idx
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	s.Head = string(head)
	s.Stash = run(t, dir, "stash", "list")
	for _, line := range strings.SplitAfter(run(t, dir, "for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if !strings.HasPrefix(line, "refs/agentjournal/") {
			s.Refs += line
		}
	}
	s.Files = fixtures.ReadTree(t, dir)
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	s.Config = map[string]string{"config": string(cfg)}
	return s
}

// waitTick lets the clock move past the index's mtime, so that git does not
// see files written in the same instant as racily clean.
func waitTick() { time.Sleep(10 * time.Millisecond) }
