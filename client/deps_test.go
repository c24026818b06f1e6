package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// forbidden are the import paths, or prefixes ending in "/", that a
// program importing the client must not link: the daemon's storage, index,
// log server and processes, and the packages of the server that hold them.
var forbidden = []string{
	"go.etcd.io/bbolt",
	"github.com/blevesearch/",
	"github.com/nats-io/nats-server",
	"github.com/creack/pty",
	"github.com/coder/acp-go-sdk",
	"github.com/agentjournal/agentjournal/projections",
	"github.com/agentjournal/agentjournal/search",
	"github.com/agentjournal/agentjournal/supervisor",
	"github.com/agentjournal/agentjournal/terminal",
	"github.com/agentjournal/agentjournal/workspace",
}

// isForbidden reports whether the package path is, or is inside, one of
// forbidden.
func isForbidden(path string) bool {
	for _, f := range forbidden {
		if path == f || strings.HasPrefix(path, strings.TrimSuffix(f, "/")+"/") {
			return true
		}
	}
	return false
}

// TestClientLinksNoServer lists the packages the client links (go list
// -deps) and fails naming each forbidden one with the chain of imports
// that brings it in.
func TestClientLinksNoServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to list the client's dependencies: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goTool, "list", "-deps", "-json=ImportPath,Imports,Standard", ".")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.Bytes())
	}
	imports := map[string][]string{}
	var root string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
			Standard   bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("read go list's output: %v", err)
		}
		if !p.Standard {
			imports[p.ImportPath] = p.Imports
		}
		root = p.ImportPath // go list -deps names the package itself last
	}
	if root != "github.com/agentjournal/agentjournal/client" {
		t.Fatalf("go list -deps ended with %q, want the client package", root)
	}
	// Each package's chain from the client: a breadth-first walk, so each
	// chain is a shortest one.
	via := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, next := range imports[p] {
			if _, ok := via[next]; ok {
				continue
			}
			if _, ok := imports[next]; !ok {
				continue // the standard library
			}
			via[next] = p
			queue = append(queue, next)
		}
	}
	var bad []string
	for p := range via {
		if isForbidden(p) {
			bad = append(bad, p)
		}
	}
	slices.Sort(bad)
	for _, p := range bad {
		chain := []string{p}
		for q := via[p]; q != ""; q = via[q] {
			chain = append(chain, q)
		}
		slices.Reverse(chain)
		t.Errorf("the client links %s: %s", p, strings.Join(chain, " → "))
	}
}
