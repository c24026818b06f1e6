package api_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/agentjournal/agentjournal/api"
	"github.com/agentjournal/agentjournal/api/apitest"
)

// servedValidator fetches, without a token, the OpenAPI document the
// server at base serves and returns a validator of it.
func servedValidator(t *testing.T, base string, opts ...config.Option) validator.Validator {
	t.Helper()
	resp, err := http.Get(base + "/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("GET /v1/openapi.yaml: %d %s, %v; want 200 application/yaml", resp.StatusCode, resp.Header.Get("Content-Type"), err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, opts...)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return v
}

// validatedGet sends a GET of path to the server at base, validates the
// request and its answer against v, and returns the answer's status,
// content type and body.
func validatedGet(t *testing.T, v validator.Validator, base, path string) (int, string, string) {
	t.Helper()
	return validatedCall(t, v, base, http.MethodGet, path, "", "")
}

// validatedCall sends method path with body, of contentType when that is
// not empty, to the server at base; validates the request, when it was
// accepted, and the answer against v; and returns the answer's status,
// content type and body. A request refused on purpose is invalid: only its
// answer is checked then.
func validatedCall(t *testing.T, v validator.Validator, base, method, path, contentType, body string) (int, string, string) {
	t.Helper()
	newReq := func() *http.Request {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, base+path, r)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+apitest.Token)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return req
	}
	resp, err := http.DefaultClient.Do(newReq())
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	check := v.ValidateHttpRequestResponse
	if resp.StatusCode/100 != 2 {
		check = v.ValidateHttpResponse
	}
	if ok, errs := check(newReq(), resp); !ok {
		for _, e := range errs {
			t.Errorf("%s %s → %d: the answer does not match openapi.yaml: %s: %s %v\nbody: %s", method, path, resp.StatusCode, e.Message, e.Reason, e.SchemaValidationErrors, data)
		}
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(data)
}

// TestOpenAPIValidatesAnswers sends requests of representative routes to
// a running server and validates each accepted request, and each answer,
// errors included, against the document the server itself serves.
func TestOpenAPIValidatesAnswers(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{Configure: []func(*api.Config){apitest.WithSearch(t)}})

	v := servedValidator(t, s.HTTP.URL, config.WithFormatAssertions())
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", errs)
	}

	// call sends a request, validates it and its answer, and returns the
	// answer's status and body.
	call := func(method, path, body string) (int, string) {
		t.Helper()
		contentType := ""
		if body != "" {
			contentType = "application/json"
		}
		code, _, data := validatedCall(t, v, s.HTTP.URL, method, path, contentType, body)
		return code, data
	}
	want := func(method, path, body string, status int) string {
		t.Helper()
		got, data := call(method, path, body)
		if got != status {
			t.Fatalf("%s %s: %d %s, want %d", method, path, got, data, status)
		}
		return data
	}

	want("GET", "/healthz", "", 200)
	_, launched := call("POST", "/v1/executions",
		`{"ownerEntity":"Task","ownerId":"t-oa","agent":"generic","command":["`+s.Agent+`","ask:r1:Proceed?","echo:1"]}`)
	id := between(launched, `"agentExecutionId":"`, `"`)
	if id == "" {
		t.Fatalf("launch answered %s, want an agentExecutionId", launched)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(want("GET", "/v1/executions/"+id, "", 200), `"currentInputRequestId":"r1"`) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never asked r1", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
	want("POST", "/v1/executions/"+id+"/observations",
		`{"observationId":"o-1","source":"sdk","confidence":"authoritative","signal":{"type":"progress","payload":{"summary":"reading"}}}`, 200)
	want("POST", "/v1/executions/"+id+"/messages", `{"type":"answer","payload":{"text":"yes","requestId":"r1"}}`, 200)
	want("POST", "/v1/executions/"+id+"/messages", `{"messageId":"m-2","type":"prompt","payload":{"text":"go on"}}`, 200)
	want("GET", "/v1/executions?owner=Task/t-oa", "", 200)
	want("GET", "/v1/executions/"+id+"/timeline?limit=5", "", 200)
	want("GET", "/v1/executions/"+id+"/records?fromSeq=1&limit=2", "", 200)
	want("GET", "/v1/executions/"+id+"/replay?toSeq=2", "", 200)
	want("GET", "/v1/log?limit=3", "", 200)
	want("GET", "/v1/executions/"+id+"/terminal", "", 200)
	for !strings.Contains(want("GET", "/v1/search?q=%22go+on%22&owner=Task/t-oa&since=1h&limit=5", "", 200), `"executionId"`) {
		if time.Now().After(deadline) {
			t.Fatal("the prompt never became searchable")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Errors, in their one shape.
	want("GET", "/v1/executions/ae-nosuch", "", 404)
	want("GET", "/v1/executions?lifecycle=sleeping", "", 400)
	want("GET", "/v1/search?q=", "", 400)
	want("POST", "/v1/executions/"+id+"/terminal", "", 409)
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
