package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentjournal/agentjournal/api"
)

func TestAuth(t *testing.T) {
	r := newRig(t)
	own := r.launch(t, "t-auth", "", "sleep:60s").Reference.AgentExecutionID
	other := r.launch(t, "t-auth", "", "sleep:60s").Reference.AgentExecutionID
	scoped := r.srv.ScopedToken(own)
	obs := func(id string) map[string]any {
		return map[string]any{"observationId": "o-" + id, "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "working"}}}
	}

	t.Run("no token", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions", nil, "", http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("wrong token", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions", nil, testToken+"x", http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("not bearer", func(t *testing.T) {
		resp, _ := r.send(t, "GET", "/v1/executions", nil, map[string]string{"Authorization": "Basic " + testToken})
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("got %d, WWW-Authenticate %q, want 401 with a Bearer challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	})
	t.Run("unknown route still needs a token", func(t *testing.T) {
		r.fail(t, "GET", "/v1/nothing-here", nil, "", http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("healthz needs none", func(t *testing.T) {
		if code, body := r.do(t, "GET", "/healthz", nil, ""); code != http.StatusOK {
			t.Fatalf("GET /healthz: %d %s, want 200", code, body)
		}
	})
	t.Run("scoped token on its own observations", func(t *testing.T) {
		code, body := r.do(t, "POST", "/v1/executions/"+own+"/observations", obs(own), scoped)
		if code != http.StatusOK {
			t.Fatalf("got %d %s, want 200", code, body)
		}
	})
	t.Run("scoped token speaks for the agent only", func(t *testing.T) {
		body := obs(own)
		body["observationId"], body["source"] = "o-daemon", "daemon"
		e := r.fail(t, "POST", "/v1/executions/"+own+"/observations", body, scoped, http.StatusBadRequest, "invalid_field", "source")
		if len(e.Error.Accepted) != 2 {
			t.Errorf("accepted %v, want mcp and sdk", e.Error.Accepted)
		}
	})
	t.Run("scoped token on another execution's observations", func(t *testing.T) {
		r.fail(t, "POST", "/v1/executions/"+other+"/observations", obs(other), scoped, http.StatusForbidden, "forbidden", "")
	})
	t.Run("scoped token elsewhere", func(t *testing.T) {
		r.fail(t, "GET", "/v1/executions/"+own, nil, scoped, http.StatusForbidden, "forbidden", "")
		r.fail(t, "POST", "/v1/executions/"+own+"/messages", map[string]any{"type": "prompt"}, scoped, http.StatusForbidden, "forbidden", "")
		r.fail(t, "GET", "/metrics", nil, scoped, http.StatusForbidden, "forbidden", "")
	})
	t.Run("forged scoped token", func(t *testing.T) {
		forged := scoped[:len(scoped)-2] + "AA"
		if forged == scoped {
			forged = scoped[:len(scoped)-2] + "BB"
		}
		r.fail(t, "POST", "/v1/executions/"+own+"/observations", obs(own), forged, http.StatusUnauthorized, "unauthorized", "")
		swapped := strings.Replace(scoped, own, other, 1)
		r.fail(t, "POST", "/v1/executions/"+other+"/observations", obs(other), swapped, http.StatusUnauthorized, "unauthorized", "")
	})
	t.Run("minted token is the agent's", func(t *testing.T) {
		var grant struct {
			AgentExecutionID string   `json:"agentExecutionId"`
			Token            string   `json:"token"`
			Allows           []string `json:"allows"`
		}
		r.call(t, "POST", "/v1/executions/"+own+"/token", nil, http.StatusOK, &grant)
		if grant.AgentExecutionID != own || grant.Token != scoped || len(grant.Allows) == 0 {
			t.Fatalf("minted %+v, want the scoped token of %s and what it allows", grant, own)
		}
		body := obs(own)
		body["observationId"] = "o-minted"
		if code, out := r.do(t, "POST", "/v1/executions/"+own+"/observations", body, grant.Token); code != http.StatusOK {
			t.Fatalf("the minted token on its execution's observations: %d %s, want 200", code, out)
		}
		r.fail(t, "POST", "/v1/executions/"+other+"/observations", obs(other), grant.Token, http.StatusForbidden, "forbidden", "")
	})
	t.Run("minting needs the API token", func(t *testing.T) {
		r.fail(t, "POST", "/v1/executions/"+other+"/token", nil, scoped, http.StatusForbidden, "forbidden", "")
	})
	t.Run("minting for no execution", func(t *testing.T) {
		r.fail(t, "POST", "/v1/executions/ae-00000000000000000000000a/token", nil, testToken, http.StatusNotFound, "not_found", "")
		r.fail(t, "POST", "/v1/executions/..%2Fetc/token", nil, testToken, http.StatusNotFound, "not_found", "")
	})
	t.Run("API token everywhere", func(t *testing.T) {
		r.call(t, "POST", "/v1/executions/"+other+"/observations", obs(other), http.StatusOK, nil)
	})
}

func TestScopedToken(t *testing.T) {
	r := newRig(t)
	tok := r.srv.ScopedToken("ae-0123456789abcdef01234567")
	if !regexp.MustCompile(`^aje1\.ae-0123456789abcdef01234567\.[A-Za-z0-9_-]{43}$`).MatchString(tok) {
		t.Fatalf("scoped token %q is not aje1.<id>.<base64url HMAC-SHA256>", tok)
	}
	for _, c := range []struct {
		name, token, id string
		ok              bool
	}{
		{"valid", tok, "ae-0123456789abcdef01234567", true},
		{"id with dots", r.srv.ScopedToken("a.b.c"), "a.b.c", true},
		{"API token", testToken, "", false},
		{"no signature", "aje1.ae-0123456789abcdef01234567", "", false},
		{"other version", "aje2" + tok[4:], "", false},
		{"empty", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id, ok := r.srv.CheckScopedToken(c.token)
			if id != c.id || ok != c.ok {
				t.Fatalf("CheckScopedToken(%q) = %q, %v; want %q, %v", c.token, id, ok, c.id, c.ok)
			}
		})
	}
}

func TestLoadOrCreateToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets", "api-token")
	tok, err := api.LoadOrCreateToken(path)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(tok) {
		t.Fatalf("token %q is not 32 random bytes in hex", tok)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Fatalf("token file mode %04o, want 0600", got)
	}
	again, err := api.LoadOrCreateToken(path)
	if err != nil || again != tok {
		t.Fatalf("second load: %q, %v; want %q", again, err, tok)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := api.LoadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("load of a 0644 token file: %v, want a refusal that says chmod 600", err)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := api.LoadOrCreateToken(path); err == nil {
		t.Fatal("load of a token file holding a short token: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	err := api.Config{Secret: []byte("short"), MaxBody: -1}.Validate()
	if err == nil {
		t.Fatal("Validate of an empty config: no error")
	}
	for _, want := range []string{"Store", "Runtime", "Views", "Token", "Secret", "MaxBody"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v\nwant it to name %s", err, want)
		}
	}
}
