package agent

import (
	"regexp"
	"strconv"
	"strings"
)

// Versioned is an Agent whose CLI says its version when asked. Before a
// launch the runtime runs the command VersionCommand gives for the launch's
// command (bounded, and once per program file), records the version in the journal's header and hands
// it to the driver (VersionReader): what some of the CLI's output lines mean,
// its usage above all, changed from one version to another, and not every
// CLI says its version in its output (Codex does not).
type Versioned interface {
	VersionCommand(command []string) (program string, args []string)
}

// VersionReader is a Driver whose reading of its CLI's output depends on
// the CLI's version. SetAgentVersion is called before the first process
// starts, with "" when the version is unknown: the driver then reads the
// output as the newest version it knows writes it.
type VersionReader interface {
	SetAgentVersion(version string)
}

// Tokens are token counts: input (prompt tokens, cached ones included) and
// output.
type Tokens struct {
	Input, Output int64
}

// SessionCounter is a Driver whose CLI reports its session's running
// totals, the turns of earlier processes included, so that a run that
// resumes a session must not count again what the runs before it counted.
// CountedBefore gives it those: what the executions whose session it
// continues counted, before the first process starts.
type SessionCounter interface {
	CountedBefore(Tokens)
}

// VersionFlag is the command line that asks a CLI that takes --version its
// version: the launch's program (program when the launch gave none),
// without the launch's other arguments.
func VersionFlag(command []string, program string) (string, []string) {
	p, _ := UserCommand(command, program)
	return p, []string{"--version"}
}

// versionPattern finds a version in what a CLI prints for --version:
// "2.1.328 (Claude Code)", "codex-cli 0.169.0".
var versionPattern = regexp.MustCompile(`\b\d+\.\d+(?:\.\d+)?(?:-[0-9A-Za-z.]+)?\b`)

// ParseVersion is the first version in a CLI's answer to --version, or ""
// when it names none.
func ParseVersion(out string) string {
	return versionPattern.FindString(out)
}

// CompareVersions compares two dotted versions by their numbers: -1 when a
// is older than b, 0 when equal, 1 when newer. A pre-release suffix
// ("-alpha.1") is ignored, and a missing part counts as 0.
func CompareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

func versionParts(v string) []int {
	v, _, _ = strings.Cut(v, "-")
	var parts []int
	for _, f := range strings.Split(v, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			break
		}
		parts = append(parts, n)
	}
	return parts
}

// InRange reports whether version v is at least from and older than to; an
// empty bound is open. An unknown version ("") is in no range.
func InRange(v, from, to string) bool {
	if v == "" || len(versionParts(v)) == 0 {
		return false
	}
	return (from == "" || CompareVersions(v, from) >= 0) && (to == "" || CompareVersions(v, to) < 0)
}
