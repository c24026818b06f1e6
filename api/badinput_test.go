package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/agentjournal/agentjournal/api"
)

// badValues are what a client may send where a field or a parameter wants
// something else: wrong JSON types, numbers out of every range, empty and
// odd strings.
var badValues = []string{`1e400`, `-1`, `18446744073709551616`, `0.5`, `"x"`, `""`, `"\u0000"`, `{}`, `[]`, `[1]`, `true`, `null`}

// badParams are query values a parameter does not take.
var badParams = []string{"x", "-1", "1e999", "99999999999999999999999", "", "\xff", strings.Repeat("a", 5000), "0", "0.5"}

// No bad input is answered 500 internal: every route, given malformed
// query parameters, bad ids in its path, a body of the wrong shape, or a
// property of the wrong type, out of range or not one of its values,
// answers a 4xx that names what is accepted. The routes and their
// parameters and properties are read from openapi.yaml, so a new one is
// covered as it is documented.
func TestBadInputIsNeverInternal(t *testing.T) {
	r := newRig(t, func(c *api.Config) { c.DecisionWait = 200 * time.Millisecond })
	id := r.launch(t, "t-bad-input", "", "sleep:60s").Reference.AgentExecutionID
	spec, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	defer func() { t.Logf("%d requests", checked) }()
	check := func(method, path, body string) {
		t.Helper()
		var b any
		if body != "" {
			b = body
		}
		checked++
		code, data := r.do(t, method, path, b, testToken)
		var e apiErr
		_ = json.Unmarshal(data, &e)
		if code >= 500 && code != http.StatusNotImplemented && code != http.StatusServiceUnavailable || e.Error.Code == "internal" {
			t.Errorf("%s %s %s: %d %s, want a 4xx naming what is accepted", method, clipped(path), clipped(body), code, clipped(string(data)))
		}
	}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		if path == "/v1/events" || strings.HasSuffix(path, "/terminal/attach") || path == "/mcp" {
			continue // streams: their refusals come before the stream, covered by their own tests
		}
		for _, badID := range []string{"%FF", "%2E%2E", "a%00b", "a%20b", "%C3%BC", "a*b", "a>b", "a.b", strings.Repeat("x", 300)} {
			for method := range item.GetOperations().FromOldest() {
				if strings.Contains(path, "{") {
					check(strings.ToUpper(method), fill(path, badID), "")
				}
			}
		}
		live := fill(path, id)
		for method, op := range item.GetOperations().FromOldest() {
			method = strings.ToUpper(method)
			params := append(append([]*v3.Parameter{}, item.Parameters...), op.Parameters...)
			for _, p := range params {
				if p.In != "query" {
					continue
				}
				for _, v := range badParams {
					check(method, live+"?"+url.Values{p.Name: {v}}.Encode(), "")
				}
			}
			check(method, live+"?zzz=1", "")
			if method != http.MethodPost || path == "/v1/journals" {
				continue
			}
			for _, body := range []string{`[]`, `"s"`, `null`, `{`, `{"zzz":1}`, `1e400`, `{"a":1,"a":2}`} {
				check(method, live, body)
			}
			if op.RequestBody == nil {
				continue
			}
			for _, mt := range op.RequestBody.Content.FromOldest() {
				for _, prop := range properties(mt.Schema) {
					for _, v := range append(badValues, badEnum(prop)...) {
						check(method, live, `{"`+prop.name+`":`+v+`}`)
					}
				}
			}
		}
	}
}

// TestBadFieldsInValidBodies: a body that is right but for one field,
// which is of the wrong type, out of range, empty or not one of its
// values, is answered 4xx, never 500: the checks after decoding see such
// values too.
func TestBadFieldsInValidBodies(t *testing.T) {
	r := newRig(t, func(c *api.Config) { c.DecisionWait = 200 * time.Millisecond })
	id := r.launch(t, "t-bad-fields", "", "sleep:60s").Reference.AgentExecutionID
	ended := r.launch(t, "t-bad-fields", "").Reference.AgentExecutionID
	x := "/v1/executions/" + id
	for _, tc := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/executions", map[string]any{"ownerEntity": "Task", "ownerId": "t-bad", "agent": "generic", "command": []string{r.agent, "sleep:60s"},
			"prompt": "p", "dir": t.TempDir(), "timeout": "1m", "posture": "structured-headless", "seed": "s", "env": map[string]string{"A": "1"},
			"dispatchContext": map[string]any{"originSurface": "web", "originProductId": "p", "dispatchMode": "interactive",
				"initiatedAt": time.Now().UTC().Format(time.RFC3339)}, "placement": map[string]any{}}},
		{x + "/messages", map[string]any{"type": "prompt", "payload": map[string]any{"text": "more"}, "messageId": "m-1"}},
		{x + "/observations", map[string]any{"observationId": "o-1", "source": "mcp", "confidence": "high",
			"signal": map[string]any{"type": "progress", "payload": map[string]any{"summary": "working"}}}},
		{"/v1/executions/" + ended + "/fork", map[string]any{"at": 1, "prompt": "p", "workspace": "keep", "seed": "s"}},
		{"/v1/executions/" + ended + "/resume", map[string]any{"prompt": "p", "seed": "s"}},
		{x + "/commands", map[string]any{"text": "/checkpoint", "focus": "prompt", "id": "c-1"}},
		{x + "/checkpoints", map[string]any{"id": "cp-1", "title": "t", "summary": "s"}},
		{"/v1/projections/rebuild", map[string]any{}},
	} {
		// The body as it is is taken: each refusal below is the one
		// field's.
		if code, answer := r.do(t, "POST", tc.path, tc.body, testToken); code >= 300 {
			t.Fatalf("POST %s as it is: %d %s, want it taken", tc.path, code, answer)
		}
		for field := range tc.body {
			for _, v := range append(badValues, `"not-one-of-them"`, `9223372036854775807`, `-9223372036854775808`, `{"zzz":1}`) {
				body := map[string]json.RawMessage{}
				for k, val := range tc.body {
					data, _ := json.Marshal(val)
					body[k] = data
				}
				body[field] = json.RawMessage(v)
				data, _ := json.Marshal(body)
				code, answer := r.do(t, "POST", tc.path, string(data), testToken)
				var e apiErr
				_ = json.Unmarshal(answer, &e)
				if code >= 500 && code != http.StatusNotImplemented && code != http.StatusServiceUnavailable || e.Error.Code == "internal" {
					t.Errorf("POST %s %s: %d %s, want a 4xx naming what is accepted", tc.path, clipped(string(data)), code, clipped(string(answer)))
				}
			}
		}
	}
}

type property struct {
	name   string
	schema *base.Schema
}

// properties are the top-level properties of a body's schema, and those of
// its allOf and oneOf parts.
func properties(proxy *base.SchemaProxy) []property {
	if proxy == nil {
		return nil
	}
	s := proxy.Schema()
	if s == nil {
		return nil
	}
	var out []property
	if s.Properties != nil {
		for name, p := range s.Properties.FromOldest() {
			out = append(out, property{name, p.Schema()})
		}
	}
	for _, part := range append(append([]*base.SchemaProxy{}, s.AllOf...), s.OneOf...) {
		out = append(out, properties(part)...)
	}
	return out
}

// badEnum is a value an enum property does not take, and for an object one
// with a bad value in each of its own properties.
func badEnum(p property) []string {
	if p.schema == nil {
		return nil
	}
	out := []string{`"not-one-of-them"`}
	if p.schema.Properties != nil {
		for name := range p.schema.Properties.FromOldest() {
			for _, v := range []string{`"not-one-of-them"`, `1e400`, `-1`, `{}`} {
				out = append(out, `{"`+name+`":`+v+`}`)
			}
		}
	}
	return out
}

// fill puts id into every {…} segment of an OpenAPI path.
func fill(path, id string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") {
			segs[i] = id
		}
	}
	return strings.Join(segs, "/")
}

func clipped(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
