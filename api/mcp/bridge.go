package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunStdioBridge serves MCP on in and out (newline-delimited JSON-RPC, as
// an agent that speaks stdio MCP expects) and forwards each tool call to the
// daemon's streamable HTTP endpoint at url, authenticated with the
// execution's scoped token. It offers the tools the daemon lists. Each
// forwarded call carries a call id (MetaCallID) unless the agent set one, so
// a call the bridge retries after losing the daemon is recorded once.
//
// It returns nil when in ends or ctx is cancelled, and an error when the
// daemon cannot be reached or refuses the token at the start. in is closed
// when the bridge stops if it is an io.Closer; out is never closed.
func RunStdioBridge(ctx context.Context, url, token string, in io.Reader, out io.Writer) error {
	r := newRemote(url, token)
	defer r.close()
	cs, err := r.session(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	server := sdk.NewServer(&sdk.Implementation{Name: "agentjournal-bridge", Title: implementation.Title, Version: implementation.Version},
		&sdk.ServerOptions{Instructions: instructions})
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the tools of %s: %w", url, err)
		}
		server.AddTool(tool, r.forward(tool.Name))
	}

	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	err = server.Run(ctx, &sdk.IOTransport{Reader: rc, Writer: nopWriteCloser{out}})
	if ctx.Err() != nil || err == nil || errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) {
		return nil
	}
	return fmt.Errorf("serve MCP on stdio: %w", err)
}

// remote is the bridge's client connection to the daemon, opened again when
// it breaks.
type remote struct {
	url       string
	client    *sdk.Client
	transport *http.Transport
	http      *http.Client
	// instance and calls make the call ids the bridge supplies.
	instance string
	calls    atomic.Uint64

	mu sync.Mutex
	cs *sdk.ClientSession
}

func newRemote(url, token string) *remote {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("mcp: read random bridge id: %v", err))
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &remote{
		url:       url,
		client:    sdk.NewClient(&sdk.Implementation{Name: "agentjournal-bridge", Version: implementation.Version}, nil),
		transport: transport,
		http:      &http.Client{Transport: bearerTransport{token: token, base: transport}},
		instance:  "bridge-" + hex.EncodeToString(b[:]),
	}
}

// session returns the open client session, connecting first if there is
// none.
func (r *remote) session(ctx context.Context) (*sdk.ClientSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cs != nil {
		return r.cs, nil
	}
	cs, err := r.client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: r.url, HTTPClient: r.http}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to the agentjournal daemon at %s: %w", r.url, err)
	}
	r.cs = cs
	return cs, nil
}

// drop forgets a broken session, so the next call connects again.
func (r *remote) drop(cs *sdk.ClientSession) {
	r.mu.Lock()
	if r.cs == cs {
		r.cs = nil
	}
	r.mu.Unlock()
	cs.Close()
}

func (r *remote) close() {
	r.mu.Lock()
	cs := r.cs
	r.cs = nil
	r.mu.Unlock()
	if cs != nil {
		cs.Close()
	}
	r.transport.CloseIdleConnections()
}

// forward returns the handler that passes calls of one tool to the daemon
// and its answers back. A protocol error of the daemon is passed on as it
// is; a daemon that cannot be reached, after one new connection, is a tool
// error, so the agent learns its signal was not recorded.
func (r *remote) forward(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		meta := maps.Clone(req.Params.Meta)
		if _, ok := meta[MetaCallID]; !ok {
			if meta == nil {
				meta = sdk.Meta{}
			}
			meta[MetaCallID] = r.instance + "-" + strconv.FormatUint(r.calls.Add(1), 10)
		}
		params := &sdk.CallToolParams{Meta: meta, Name: name}
		if len(req.Params.Arguments) > 0 {
			params.Arguments = req.Params.Arguments
		}
		var lastErr error
		for range 2 {
			cs, err := r.session(ctx)
			if err != nil {
				lastErr = err
				continue
			}
			res, err := cs.CallTool(ctx, params)
			if err == nil {
				return res, nil
			}
			if wireErr, ok := daemonError(err); ok {
				return nil, wireErr
			}
			r.drop(cs)
			lastErr = err
			if ctx.Err() != nil {
				break
			}
		}
		return toolError(fmt.Sprintf("%s: the signal was not recorded: %v", name, lastErr)), nil
	}
}

// The SDK's client reports failures of its own side as JSON-RPC errors
// with these codes; "rejected by transport" wraps every request that did not
// get an answer, e.g. a connection lost before the response.
const (
	codeClientClosing       = -32003
	codeServerClosing       = -32004
	codeRejectedByTransport = -32005
)

// daemonError returns the JSON-RPC error the daemon answered with, if err
// carries one, as opposed to a failure to reach it.
func daemonError(err error) (*jsonrpc.Error, bool) {
	var walk func(error) *jsonrpc.Error
	walk = func(err error) *jsonrpc.Error {
		if w, ok := err.(*jsonrpc.Error); ok {
			switch w.Code {
			case codeClientClosing, codeServerClosing, codeRejectedByTransport:
			default:
				return w
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if next := u.Unwrap(); next != nil {
				return walk(next)
			}
		case interface{ Unwrap() []error }:
			for _, next := range u.Unwrap() {
				if w := walk(next); w != nil {
					return w
				}
			}
		}
		return nil
	}
	w := walk(err)
	return w, w != nil
}

// bearerTransport adds the execution's token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (t bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+t.token)
	return t.base.RoundTrip(req)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
