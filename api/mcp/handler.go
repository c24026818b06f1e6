package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Authorizer checks the tokens agents present.
type Authorizer interface {
	// CheckScopedToken maps a bearer token to the one execution it may signal.
	CheckScopedToken(token string) (agentExecutionID string, ok bool)
}

// executionKey carries the execution an authenticated request may signal.
type executionKey struct{}

// NewHandler returns the streamable HTTP MCP endpoint. Every request must
// carry "Authorization: Bearer <token>" with a token scoped to one
// execution; a request without one, or with a token auth does not know, is
// answered 401 before any MCP handling. The token alone decides the
// execution a call records into: no tool argument names an execution.
//
// The endpoint keeps no MCP sessions: each request stands on its own, so a
// daemon restart does not break a connected agent.
func NewHandler(rec Recorder, auth Authorizer, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	server := newSignalTools(rec, logger).server()
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Stateless: true, Logger: logger})
	// The SDK's bearer middleware puts the execution, as the token's user,
	// where the transport hands it to each call. The token was checked
	// below; the verifier only reads the result.
	withToken := sdkauth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		id, ok := r.Context().Value(executionKey{}).(string)
		if !ok {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: id}, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(mcpHandler)

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			unauthorized(w, "missing bearer token (want Authorization: Bearer <the execution's token>)")
			return
		}
		id, ok := auth.CheckScopedToken(token)
		if !ok || id == "" {
			logger.Warn("refused an MCP request with an unknown token", logKeyRemote, r.RemoteAddr)
			unauthorized(w, "invalid token")
			return
		}
		withToken.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), executionKey{}, id)))
	})
}

// executionOf returns the execution a call may signal: the user of the
// token the request was authenticated with.
func executionOf(req *sdk.CallToolRequest) (string, bool) {
	if req.Extra == nil || req.Extra.TokenInfo == nil || req.Extra.TokenInfo.UserID == "" {
		return "", false
	}
	return req.Extra.TokenInfo.UserID, true
}

// bearerToken reads the token of an "Authorization: Bearer <token>" header.
func bearerToken(r *http.Request) (string, bool) {
	fields := strings.Fields(r.Header.Get("Authorization"))
	if len(fields) != 2 || !strings.EqualFold(fields[0], "bearer") {
		return "", false
	}
	return fields[1], true
}

// unauthorized answers in the daemon API's error shape, so a client reads
// every refusal the same way.
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentjournal"`)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "unauthorized", "message": msg}})
}
