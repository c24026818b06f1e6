package api

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/agentjournal/agentjournal/api/web"
	"github.com/agentjournal/agentjournal/eventstore"
)

// TestOpenAPICoversRoutes holds the OpenAPI document to the mux: every
// route the server registers is documented with its method and path, and
// every documented operation reaches a registered route with that method.
func TestOpenAPICoversRoutes(t *testing.T) {
	model := openAPIModel(t)
	if v := model.Model.Version; v != "3.1.0" {
		t.Errorf("openapi: %s, want 3.1.0", v)
	}
	documented := map[string]bool{} // "METHOD /path"
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().KeysFromOldest() {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}

	// Every route, MCP included.
	s := &Server{mux: http.NewServeMux(), access: map[string]access{}, cfg: Config{MCP: http.NotFoundHandler()}}
	s.routes()
	for pattern := range s.access {
		for _, op := range documentedAs(pattern) {
			if !documented[op] {
				t.Errorf("route %q is registered but %q is not in openapi.yaml", pattern, op)
			}
		}
	}

	// Every documented operation reaches its route.
	for op := range documented {
		method, path, _ := strings.Cut(op, " ")
		url := strings.NewReplacer("{id}", "ae-x", "{asset}", "app.js").Replace(path)
		_, pattern := s.mux.Handler(httptest.NewRequest(method, url, nil))
		if _, ok := s.access[pattern]; !ok {
			t.Errorf("openapi.yaml documents %s, which no route serves (the mux matched %q)", op, pattern)
			continue
		}
		if m, _, hasMethod := strings.Cut(pattern, " "); hasMethod && m != method {
			t.Errorf("openapi.yaml documents %s, served by route %q", op, pattern)
		}
	}
}

// openAPIModel is the OpenAPI 3 model of openapi.yaml.
func openAPIModel(t *testing.T) *libopenapi.DocumentModel[v3.Document] {
	t.Helper()
	doc, err := libopenapi.NewDocument(openAPIDocument)
	if err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("build the OpenAPI 3 model of openapi.yaml: %v", err)
	}
	return model
}

// documentedAs returns the operations of openapi.yaml a mux pattern is:
// itself, but for the patterns OpenAPI cannot spell.
func documentedAs(pattern string) []string {
	method, path, hasMethod := strings.Cut(pattern, " ")
	if !hasMethod {
		// The MCP handler takes any method; it speaks GET, POST and
		// DELETE. /mcp/ is the same handler.
		path = strings.TrimSuffix(pattern, "/")
		return []string{"GET " + path, "POST " + path, "DELETE " + path}
	}
	switch {
	case path == "/{$}":
		path = "/"
	case path == web.AssetPrefix:
		path += "{asset}" // a prefix: one asset per name
	}
	return []string{method + " " + path}
}

// TestOpenAPIEnums holds the enumerations the document spells out to the
// ones the daemon accepts.
func TestOpenAPIEnums(t *testing.T) {
	model := openAPIModel(t)
	schemas := model.Model.Components.Schemas
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"OwnerEntity", strs(eventstore.OwnerEntities)},
		{"Lifecycle", strs(eventstore.Lifecycles)},
		{"Attention", strs(eventstore.Attentions)},
		{"Posture", strs(eventstore.Postures)},
		{"SessionShape", strs(eventstore.SessionShapes)},
	} {
		proxy, ok := schemas.Get(tc.name)
		if !ok {
			t.Errorf("no schema %s in openapi.yaml", tc.name)
			continue
		}
		var got []string
		for _, n := range proxy.Schema().Enum {
			got = append(got, n.Value)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("schema %s: enum %q, want %q", tc.name, got, tc.want)
		}
	}
}
