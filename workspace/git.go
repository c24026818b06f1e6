package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Identity written into snapshot commits, so that commit-tree works in a
// repository whose user has configured no name or email.
const (
	commitName  = "agentjournal"
	commitEmail = "agentjournal@localhost"
)

// baseEnv is the process environment without any GIT_* variable: a daemon
// started from a git hook or with GIT_DIR or GIT_INDEX_FILE set must not
// point our commands at another repository or at the user's index.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		// Never refresh the user's index as a side effect of a read.
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME="+commitName, "GIT_AUTHOR_EMAIL="+commitEmail,
		"GIT_COMMITTER_NAME="+commitName, "GIT_COMMITTER_EMAIL="+commitEmail,
	)
}

// gitError is a failed git command with what it printed on stderr.
type gitError struct {
	args   []string
	stderr string
	err    error
}

func (e *gitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if msg == "" {
		msg = e.err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.args, " "), msg)
}

func (e *gitError) Unwrap() error { return e.err }

// exitCode is the exit status of a failed git command, -1 when it did not
// run or was killed.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// git runs the git binary in dir with env added to the cleaned environment
// and returns its stdout.
func git(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdin = stdin
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("workspace: the git binary is not on PATH: %w", err)
		}
		return nil, &gitError{args: args, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// gitLine runs git and returns its output's first line.
func gitLine(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	out, err := git(ctx, dir, env, nil, args...)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line, nil
}

// repo is the work tree a directory belongs to.
type repo struct {
	top    string // top level of the work tree
	gitDir string // absolute git directory of that work tree
	index  string // the work tree's real index file
}

// openRepo finds the work tree dir is in. A directory outside any work tree
// (or inside a bare repository or a .git directory) is a *NotGitError.
func openRepo(ctx context.Context, dir string) (*repo, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace: %s is not a directory", dir)
	}
	out, err := git(ctx, dir, nil, nil, "rev-parse", "--is-inside-work-tree", "--show-toplevel", "--absolute-git-dir", "--git-path", "index")
	if err != nil {
		var ge *gitError
		if errors.As(err, &ge) && exitCode(err) == 128 {
			return nil, &NotGitError{Dir: dir, Reason: firstLine(ge.stderr)}
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) > 0 && lines[0] == "false" {
		return nil, &NotGitError{Dir: dir, Reason: "not inside a work tree (a bare repository or a .git directory)"}
	}
	if len(lines) != 4 {
		return nil, fmt.Errorf("workspace: git rev-parse in %s printed %q", dir, out)
	}
	r := &repo{top: lines[1], gitDir: lines[2], index: lines[3]}
	if !filepath.IsAbs(r.index) {
		// --git-path answers relative to the directory git ran in.
		r.index = filepath.Join(dir, r.index)
	}
	return r, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimPrefix(line, "fatal: ")
}
