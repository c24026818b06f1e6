package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentjournal/agentjournal/api/wire"
)

const (
	// scopedTokenPrefix starts every execution-scoped token; the version
	// lets the format change without accepting old tokens by mistake.
	scopedTokenPrefix = "aje1."
	// tokenBytes is the entropy of a new API token.
	tokenBytes = 32
	// minTokenLength is the shortest API token a token file may hold.
	minTokenLength = 32
	// accessTokenParam is the query parameter that carries the API token
	// on a streamToken route.
	accessTokenParam = "access_token"
)

// LoadOrCreateToken returns the API token kept in the file at path. On the
// first call it creates the file, mode 0600 in a 0700 directory, holding 32
// random bytes in hex. It refuses a file that group or others may read or
// write, a file that is not a regular file, and a token shorter than 32
// characters.
func LoadOrCreateToken(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	token, err := createToken(path)
	if !errors.Is(err, fs.ErrExist) {
		return token, err
	}
	return readToken(path)
}

// createToken writes a new token to a temporary file and links it into
// place, so that no reader ever sees a half-written token file and two
// daemons starting at once agree on one token. fs.ErrExist means the file
// is there already.
func createToken(path string) (string, error) {
	if _, err := os.Lstat(path); err == nil {
		return "", fs.ErrExist
	}
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	token := hex.EncodeToString(b)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".api-token-*")
	if err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600 already; say so for the reader.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("api token: %w", err)
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return "", fmt.Errorf("api token: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("api token: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("api token: write %s: %w", tmp.Name(), err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fs.ErrExist
		}
		return "", fmt.Errorf("api token: create %s: %w", path, err)
	}
	return token, nil
}

func readToken(path string) (string, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	switch {
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("api token: %s is not a regular file (%s); remove it to have a new token created", path, info.Mode().Type())
	case info.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("api token: %s has mode %04o, so other users may read or change it; run chmod 600 %s (or remove it to have a new token created)",
			path, info.Mode().Perm(), path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("api token: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("api token: read %s: %w", path, err)
	}
	token := strings.TrimSpace(string(data))
	switch {
	case len(token) < minTokenLength:
		return "", fmt.Errorf("api token: %s holds a token of %d characters (want at least %d); remove it to have a new token created", path, len(token), minTokenLength)
	case strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("api token: %s holds more than one printable word; remove it to have a new token created", path)
	}
	return token, nil
}

// ScopedToken returns the token an agent gets for its own execution:
// "aje1.<id>.<base64url HMAC-SHA256(Secret, id)>". It is accepted only for
// that execution's observations and by the MCP handler.
func (s *Server) ScopedToken(agentExecutionID string) string {
	return scopedTokenPrefix + agentExecutionID + "." + base64.RawURLEncoding.EncodeToString(s.mac(agentExecutionID))
}

// CheckScopedToken reports whether token is a scoped token signed by this
// server's secret, and for which execution.
func (s *Server) CheckScopedToken(token string) (agentExecutionID string, ok bool) {
	rest, ok := strings.CutPrefix(token, scopedTokenPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i <= 0 {
		return "", false
	}
	id, sig := rest[:i], rest[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(id)) {
		return "", false
	}
	return id, true
}

func (s *Server) mac(id string) []byte {
	m := hmac.New(sha256.New, s.cfg.Secret)
	m.Write([]byte(id))
	return m.Sum(nil)
}

// scopeKey carries the execution a scoped token names in a request's
// context; absent for the API token.
type scopeKey struct{}

func scopedExecution(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(scopeKey{}).(string)
	return id, ok
}

// authenticate checks the bearer token against what the route accepts and
// returns the request context, carrying the scope of a scoped token.
func (s *Server) authenticate(r *http.Request, acc access) (context.Context, error) {
	token, err := requestToken(r, acc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1 {
		return r.Context(), nil
	}
	id, ok := s.CheckScopedToken(token)
	switch {
	case !ok:
		return nil, &apiError{status: http.StatusUnauthorized, code: wire.CodeUnauthorized, message: "the token is not valid"}
	case acc == fullToken || acc == streamToken:
		return nil, forbidden("this token is scoped to execution %s: it may record that execution's observations and use MCP, nothing else", id)
	}
	if err := s.scopeLive(id); err != nil {
		return nil, err
	}
	return context.WithValue(r.Context(), scopeKey{}, id), nil
}

// requestToken returns the token of a request: the bearer token, or on a
// streamToken route without an Authorization header the access_token query
// parameter. Every other route ignores that parameter (and then refuses it
// as unknown).
func requestToken(r *http.Request, acc access) (string, error) {
	if acc == streamToken && r.Header.Get("Authorization") == "" {
		if token := r.URL.Query().Get(accessTokenParam); token != "" {
			return token, nil
		}
		return "", &apiError{status: http.StatusUnauthorized, code: wire.CodeUnauthorized,
			message: "no token: send the header Authorization: Bearer <token>, or from a browser's EventSource the query parameter " + accessTokenParam}
	}
	return bearer(r)
}

func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &apiError{status: http.StatusUnauthorized, code: wire.CodeUnauthorized,
			message: "no token: send the header Authorization: Bearer <token>"}
	}
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", &apiError{status: http.StatusUnauthorized, code: wire.CodeUnauthorized,
			message: "the Authorization header is not \"Bearer <token>\""}
	}
	return token, nil
}
