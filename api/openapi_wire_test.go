package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/contract"
	"github.com/agentjournal/agentjournal/eventstore"
	"github.com/agentjournal/agentjournal/lineage"
	"github.com/agentjournal/agentjournal/narrative"
	"github.com/agentjournal/agentjournal/runtime/outputlog"
)

// wireBody is the wire type of an operation's request body, and of its
// answers by status ("201"), or by status and media type for an answer
// that is not application/json ("200 application/x-ndjson"). Every error
// answer is a wire.ErrorBody.
type wireBody struct {
	request reflect.Type
	answers map[string]reflect.Type
}

// typeOf is reflect.TypeFor, short enough for the table.
func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// noBody is the request of a route that takes an empty object, or none.
type noBody struct{}

// answers200 is the body of a route that takes none and answers T.
func answers200[T any]() wireBody {
	return wireBody{answers: map[string]reflect.Type{"200": typeOf[T]()}}
}

// takes is the body of a route that takes Req and answers Ans with status.
func takes[Req, Ans any](status string) wireBody {
	return wireBody{request: typeOf[Req](), answers: map[string]reflect.Type{status: typeOf[Ans]()}}
}

// wireBodies names the type the server encodes or decodes for every JSON
// body openapi.yaml documents, by operation. The server's handlers and the
// client use these types; TestOpenAPIWireTypes holds them to the document.
var wireBodies = map[string]wireBody{
	"GET /healthz":                             answers200[wire.Health](),
	"GET /v1/agents":                           answers200[wire.AgentCatalog](),
	"GET /v1/hosts":                            answers200[wire.Hosts](),
	"GET /v1/executions":                       answers200[wire.Executions](),
	"POST /v1/executions":                      takes[wire.LaunchRequest, wire.Launched]("201"),
	"GET /v1/queue":                            answers200[wire.Queue](),
	"GET /v1/executions/{id}":                  answers200[wire.Execution](),
	"POST /v1/executions/{id}/stop":            takes[noBody, wire.Execution]("200"),
	"POST /v1/executions/{id}/fork":            takes[wire.ForkRequest, wire.Launched]("201"),
	"POST /v1/executions/{id}/resume":          takes[wire.ResumeRequest, wire.Launched]("201"),
	"POST /v1/executions/{id}/token":           takes[noBody, wire.ScopedToken]("200"),
	"POST /v1/executions/{id}/messages":        takes[wire.Message, wire.MessageAck]("200"),
	"POST /v1/executions/{id}/observations":    takes[wire.Observation, wire.ObservationAck]("200"),
	"GET /v1/executions/{id}/terminal":         answers200[wire.Terminal](),
	"POST /v1/executions/{id}/terminal":        takes[noBody, wire.Terminal]("200"),
	"POST /v1/executions/{id}/terminal/attach": takes[wire.TerminalAttach, wire.Terminal]("200"),
	"POST /v1/executions/{id}/terminal/input":  takes[wire.TerminalInput, wire.Terminal]("200"),
	"GET /v1/executions/{id}/output": {answers: map[string]reflect.Type{
		"200": typeOf[wire.Output](), "200 application/x-ndjson": typeOf[outputlog.Entry]()}},
	"GET /v1/executions/{id}/timeline":       answers200[wire.Timeline](),
	"GET /v1/executions/{id}/records":        answers200[wire.Records](),
	"GET /v1/executions/{id}/replay":         answers200[wire.Replay](),
	"GET /v1/executions/{id}/lineage":        answers200[wire.Lineage](),
	"GET /v1/executions/{id}/narrative":      answers200[narrative.Narrative](),
	"GET /v1/executions/{id}/transcript":     answers200[wire.Transcript](),
	"GET /v1/executions/{id}/todos":          answers200[wire.Todos](),
	"GET /v1/executions/{id}/approvals":      answers200[wire.Approvals](),
	"GET /v1/executions/{id}/run":            answers200[contract.AgentRun](),
	"GET /v1/executions/{id}/checkpoints":    answers200[wire.Checkpoints](),
	"POST /v1/executions/{id}/checkpoints":   takes[wire.CheckpointRequest, contract.AgentCheckpoint]("201"),
	"GET /v1/executions/{id}/commands":       answers200[wire.Completions](),
	"POST /v1/executions/{id}/commands":      takes[wire.CommandRequest, wire.CommandResult]("200"),
	"GET /v1/sessions":                       answers200[wire.Sessions](),
	"GET /v1/sessions/{sessionId}":           answers200[wire.Session](),
	"GET /v1/sessions/{sessionId}/narrative": answers200[narrative.Narrative](),
	"GET /v1/graph":                          answers200[lineage.Graph](),
	"GET /v1/events/{eventId}/origin":        answers200[lineage.Origin](),
	"GET /v1/log":                            answers200[wire.Entries](),
	"GET /v1/journals":                       answers200[wire.Journals](),
	"POST /v1/journals": {answers: map[string]reflect.Type{
		"200": typeOf[wire.ImportResult](), "201": typeOf[wire.ImportResult]()}},
	"GET /v1/journals/{id}":         answers200[eventstore.Reference](),
	"GET /v1/journals/{id}/entries": answers200[wire.Entries](),
	"POST /v1/projections/rebuild": {answers: map[string]reflect.Type{
		"200 application/x-ndjson": typeOf[wire.RebuildProgress]()}},
	"GET /v1/search": answers200[wire.SearchResult](),
}

// notWire are the documented JSON bodies that are no body of this API's:
// MCP speaks its own protocol, which its SDK encodes.
var notWire = []string{"POST /mcp request"}

// TestOpenAPIWireTypes holds the wire types to openapi.yaml: for every
// JSON body the document describes, the type the server encodes or
// decodes (wireBodies) has the document's properties, no more and no
// fewer, at every level, and a property the document requires is a field
// that is always encoded. It reports every mismatch, and every JSON body
// without a type.
func TestOpenAPIWireTypes(t *testing.T) {
	model := openAPIModel(t)
	errorBody := reflect.TypeFor[wire.ErrorBody]()
	// One match for the whole document: a component schema several routes
	// share (State, say) is compared, and its differences reported, once.
	m := &schemaMatch{seen: map[schemaPair]bool{}}
	var problems []string
	seen := map[string]bool{}
	for path, item := range model.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			name := strings.ToUpper(method) + " " + path
			body, listed := wireBodies[name]
			seen[name] = listed
			if op.RequestBody != nil && op.RequestBody.Content != nil {
				if mt, ok := op.RequestBody.Content.Get("application/json"); ok && mt.Schema != nil {
					where := name + " request"
					switch {
					case slices.Contains(notWire, where):
					case body.request == nil:
						problems = append(problems, fmt.Sprintf("%s: openapi.yaml describes a JSON body and wireBodies names no type for it", where))
					default:
						m.match(where+": "+body.request.String(), body.request, mt.Schema)
					}
				} else if body.request != nil {
					problems = append(problems, fmt.Sprintf("%s request: wireBodies names %s and openapi.yaml describes no JSON body", name, body.request))
				}
			}
			if op.Responses == nil {
				continue
			}
			matched := map[string]bool{}
			check := func(status string, content *orderedmap.Map[string, *v3.MediaType]) {
				for mediaType, mt := range content.FromOldest() {
					if mt.Schema == nil || (mediaType != "application/json" && mediaType != "application/x-ndjson") {
						continue
					}
					key := status
					if mediaType != "application/json" {
						key += " " + mediaType
					}
					where := name + " " + key
					want := body.answers[key]
					if status == "default" || status[0] == '4' || status[0] == '5' {
						want = errorBody
					}
					if want == nil {
						problems = append(problems, fmt.Sprintf("%s: openapi.yaml describes a JSON answer and wireBodies names no type for it", where))
						continue
					}
					matched[key] = true
					m.match(where+": "+want.String(), want, mt.Schema)
				}
			}
			for status, resp := range op.Responses.Codes.FromOldest() {
				if resp.Content != nil {
					check(status, resp.Content)
				}
			}
			if d := op.Responses.Default; d != nil && d.Content != nil {
				check("default", d.Content)
			}
			for key, typ := range body.answers {
				if !matched[key] {
					problems = append(problems, fmt.Sprintf("%s %s: wireBodies names %s and openapi.yaml describes no such answer", name, key, typ))
				}
			}
		}
	}
	for name := range wireBodies {
		if _, ok := seen[name]; !ok {
			problems = append(problems, fmt.Sprintf("%s: in wireBodies, not in openapi.yaml", name))
		}
	}
	problems = append(problems, m.problems...)
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

type schemaPair struct {
	typ    reflect.Type
	schema *base.Schema
}

// schemaMatch compares the JSON form of Go types with schemas, and keeps
// every difference, each naming where it is.
type schemaMatch struct {
	problems []string
	// seen stops the walk of a recursive type (a fork tree) at its second
	// visit of one schema.
	seen map[schemaPair]bool
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	rawMessage    = reflect.TypeFor[json.RawMessage]()
	timeType      = reflect.TypeFor[time.Time]()
)

// opaque reports a Go type whose JSON properties reflection cannot tell:
// it encodes itself, or holds any JSON.
func opaque(typ reflect.Type) bool {
	return typ == rawMessage || typ == timeType || typ.Kind() == reflect.Interface ||
		typ.Implements(jsonMarshaler) || reflect.PointerTo(typ).Implements(jsonMarshaler)
}

func (m *schemaMatch) match(where string, typ reflect.Type, proxy *base.SchemaProxy) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	s := proxy.Schema()
	if s == nil || opaque(typ) {
		return
	}
	pair := schemaPair{typ, s}
	if m.seen[pair] {
		return
	}
	m.seen[pair] = true
	switch typ.Kind() {
	case reflect.Struct:
		m.matchObject(where, typ, s)
	case reflect.Slice, reflect.Array:
		if items := arrayItems(s); items != nil {
			m.match(where+"[]", typ.Elem(), items)
		}
	case reflect.Map:
		if ap := s.AdditionalProperties; ap != nil && ap.IsA() && ap.A != nil {
			m.match(where+"{}", typ.Elem(), ap.A)
		}
	}
}

// matchObject compares a struct's fields with an object schema's
// properties. An object schema that names no properties and does not
// forbid others leaves its content open: it is not compared.
func (m *schemaMatch) matchObject(where string, typ reflect.Type, s *base.Schema) {
	props, required := objectProperties(s)
	closed := s.AdditionalProperties != nil && s.AdditionalProperties.IsB() && !s.AdditionalProperties.B
	if len(props) == 0 && !closed {
		return
	}
	fields := jsonStructFields(typ)
	for _, name := range sortedKeys(props) {
		if _, ok := fields[name]; !ok {
			m.problems = append(m.problems, fmt.Sprintf("%s: property %q of openapi.yaml is no field of %s", where, name, typ))
		}
	}
	for _, name := range sortedKeys(fields) {
		f := fields[name]
		schema, ok := props[name]
		if !ok {
			m.problems = append(m.problems, fmt.Sprintf("%s: field %s (%q) of %s is no property in openapi.yaml", where, f.goName, name, typ))
			continue
		}
		if slices.Contains(required, name) && f.omitEmpty {
			m.problems = append(m.problems, fmt.Sprintf("%s: property %q is required in openapi.yaml, and field %s of %s is left out when empty (omitempty or omitzero)", where, name, f.goName, typ))
		}
		m.match(where+"."+name, f.typ, schema)
	}
}

// objectProperties are the properties of an object schema, with those of
// its allOf parts, and of its oneOf alternatives, any of which it may
// hold; required are those it always holds.
func objectProperties(s *base.Schema) (props map[string]*base.SchemaProxy, required []string) {
	props = map[string]*base.SchemaProxy{}
	if s.Properties != nil {
		for name, p := range s.Properties.FromOldest() {
			props[name] = p
		}
	}
	required = slices.Clone(s.Required)
	for _, part := range s.AllOf {
		p, r := objectProperties(part.Schema())
		for name, ps := range p {
			props[name] = ps
		}
		required = append(required, r...)
	}
	// A oneOf holds the properties of one of its alternatives: it always
	// holds those every alternative requires.
	var always []string
	for i, alt := range s.OneOf {
		p, r := objectProperties(alt.Schema())
		for name, ps := range p {
			props[name] = ps
		}
		if i == 0 {
			always = r
		}
		always = slices.DeleteFunc(always, func(name string) bool { return !slices.Contains(r, name) })
	}
	required = append(required, always...)
	return props, required
}

// arrayItems is the items schema of an array schema, nil when it has none.
func arrayItems(s *base.Schema) *base.SchemaProxy {
	if s.Items != nil && s.Items.IsA() {
		return s.Items.A
	}
	return nil
}

// jsonField is a field as encoding/json encodes it.
type jsonField struct {
	goName string
	typ    reflect.Type
	// omitEmpty is a field left out when empty (omitempty) or zero
	// (omitzero).
	omitEmpty bool
	depth     int
}

// jsonStructFields are the fields encoding/json encodes of a struct, by
// JSON name: an embedded struct's promoted, a shallower one hiding a
// deeper one of the same name.
func jsonStructFields(typ reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	var walk func(typ reflect.Type, depth int)
	walk = func(typ reflect.Type, depth int) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				walk(ft, depth+1)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if prev, ok := out[name]; ok && prev.depth <= depth {
				continue
			}
			o := strings.Split(opts, ",")
			out[name] = jsonField{goName: f.Name, typ: f.Type, omitEmpty: slices.Contains(o, "omitempty") || slices.Contains(o, "omitzero"), depth: depth}
		}
	}
	walk(typ, 0)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
