package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// versionModules are the modules whose versions decide how the journal is
// stored and served: what a bug report needs besides agentjournal's own.
var versionModules = []string{
	"github.com/nats-io/nats-server/v2",
	"github.com/nats-io/nats.go",
	"go.etcd.io/bbolt",
	"github.com/creack/pty",
	"github.com/modelcontextprotocol/go-sdk",
}

// printVersion writes agentjournal's version, the source revision it was
// built from, the Go version and the versions of versionModules, as the
// build recorded them.
func printVersion(w io.Writer) error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		_, err := fmt.Fprintln(w, "agentjournal (no build information: built without module support)")
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentjournal %s\n", info.Main.Version)
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		dirty := ""
		if settings["vcs.modified"] == "true" {
			dirty = " (with uncommitted changes)"
		}
		fmt.Fprintf(&b, "  revision %s%s, %s\n", rev, dirty, settings["vcs.time"])
	}
	fmt.Fprintf(&b, "  %s\n", info.GoVersion)
	deps := map[string]string{}
	for _, d := range info.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Path + " " + d.Replace.Version
		}
		deps[d.Path] = v
	}
	for _, m := range versionModules {
		if v, ok := deps[m]; ok {
			fmt.Fprintf(&b, "  %s %s\n", m, v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
