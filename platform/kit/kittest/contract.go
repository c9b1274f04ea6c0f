package kittest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/api/apitest"
)

// Walk is the contract and fuzz walks over one handler: every operation of the OpenAPI document
// that the handler serves, whatever its method, requested with candidate values and bodies and
// answered as the document says. A kit Stack walks its services (Stack.CheckContract); a service
// that is no kit service walks its own handler.
type Walk struct {
	// Handler serves the requests; Validator checks each answer of the contract walk against the
	// document and counts the operations that answered a validated 2xx.
	Handler   http.Handler
	Validator *apitest.Validator
	// Serves says whether the handler serves a request: the document's operations it does not
	// serve are not walked (nil: it serves them all). See ServedUnder.
	Serves func(*http.Request) bool
	// Values are candidate values by name: of path and query parameters, and of request body
	// properties (a value of a property that is not a string is its JSON text: "false", "[1,2]").
	Values map[string][]string
	// Bodies are request bodies by operationId that the contract walk sends before the ones it
	// builds: those no schema can make up, such as a signed transaction.
	Bodies map[string][]string
	// Prepare, when set, completes every request before it is served (signs it, say).
	Prepare func(*http.Request)
	// MaxBody is the largest request body the handler reads; 0 is taken as 1 MiB. The fuzz walk sends
	// bodies over it and strings within it.
	MaxBody int
}

// ServedUnder is a Walk's Serves for a handler that serves every path under prefixes.
func ServedUnder(prefixes ...string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(r.URL.Path, p) {
				return true
			}
		}
		return false
	}
}

func (w Walk) maxBody() int {
	if w.MaxBody > 0 {
		return w.MaxBody
	}
	return 1 << 20
}

var docParam = regexp.MustCompile(`\{([^}]+)\}`)

// methods are the methods an operation may have, in the order they are walked.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// operation is an operation of the document.
type operation struct {
	id     string
	method string
	path   string   // the template, /market/{symbol}/trades
	params []string // its path parameters, in order
	query  []*openapi3.Parameter
	csv    bool // it answers format=csv too
	// body is the schema of its JSON request body (nil: it takes none), examples the documented
	// examples of that body.
	body     *openapi3.Schema
	examples []any
}

func (o operation) String() string { return o.method + " " + o.path }

// operations lists the document's operations that the handler serves, judged by whether Serves
// takes the path with the first candidate of every parameter.
func (w Walk) operations(t testing.TB) []operation {
	t.Helper()
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for _, method := range methods {
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			o := operation{id: op.OperationID, method: method, path: path}
			for _, m := range docParam.FindAllStringSubmatch(path, -1) {
				o.params = append(o.params, m[1])
			}
			for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
				if p.Value.In == openapi3.ParameterInQuery {
					o.query = append(o.query, p.Value)
					if p.Value.Name == "format" {
						o.csv = true
					}
				}
			}
			if op.RequestBody != nil {
				if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
					o.body = mt.Schema.Value
					if mt.Example != nil {
						o.examples = append(o.examples, mt.Example)
					}
					for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
						if ex := mt.Examples[name]; ex != nil && ex.Value != nil {
							o.examples = append(o.examples, ex.Value.Value)
						}
					}
					if o.body.Example != nil {
						o.examples = append(o.examples, o.body.Example)
					}
				}
			}
			sample := map[string]string{}
			for _, p := range o.params {
				sample[p] = "x"
				if vs := w.Values[p]; len(vs) > 0 {
					sample[p] = vs[0]
				}
			}
			if w.Serves == nil || w.Serves(httptest.NewRequest(method, fillPath(path, sample), nil)) {
				out = append(out, o)
			}
		}
	}
	return out
}

// fillPath substitutes the values of a path template's parameters, escaped.
func fillPath(path string, vals map[string]string) string {
	return docParam.ReplaceAllStringFunc(path, func(m string) string {
		return url.PathEscape(vals[m[1:len(m)-1]])
	})
}

// maxCombinations bounds the requests CheckEveryOperation makes per operation.
const maxCombinations = 64

// request is a request of o to target with body (nil: none), completed by Prepare.
func (w Walk) request(o operation, target string, body []byte, contentType string) *http.Request {
	var r *http.Request
	if body == nil {
		r = httptest.NewRequest(o.method, target, nil)
	} else {
		r = httptest.NewRequest(o.method, target, bytes.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
	}
	if w.Prepare != nil {
		w.Prepare(r)
	}
	return r
}

// CheckEveryOperation walks every operation of the OpenAPI document that the handler serves: it
// requests each with every combination of the candidate values of its path parameters (and, where
// the operation has one, with format=csv too), an operation that takes a body with each of its
// bodies (Walk.Bodies, then bodies built from its schema with Values, then its documented examples),
// and validates every answer against the document. It fails the test for a GET operation that never
// answered a validated 2xx, for any other that has not answered one by the end of the walk (in it or
// before it: a test may have made the one its data allows), and for an operation whose list answers
// were all empty (the test's data left it unchecked). Query parameters keep their defaults, but for
// the required ones, which take the first candidate of values under their name.
func (w Walk) CheckEveryOperation(t testing.TB) {
	t.Helper()
	ops := w.operations(t)
	if len(ops) == 0 {
		t.Fatal("the handler serves no operation of the document")
	}
	requests := 0
	for _, o := range ops {
		combos := []map[string]string{{}}
		for _, p := range o.params {
			vs := w.Values[p]
			if len(vs) == 0 {
				t.Errorf("%s: no candidate values for the path parameter %s", o.id, p)
				vs = []string{"x"}
			}
			var next []map[string]string
			for _, c := range combos {
				for _, v := range vs {
					n := map[string]string{p: v}
					for k, kv := range c {
						n[k] = kv
					}
					next = append(next, n)
				}
			}
			combos = next[:min(len(next), maxCombinations)]
		}
		required := url.Values{}
		for _, p := range o.query {
			if p.Required {
				if vs := w.Values[p.Name]; len(vs) > 0 {
					required.Set(p.Name, vs[0])
				} else {
					t.Errorf("%s: no candidate value for the required query parameter %s", o.id, p.Name)
				}
			}
		}
		bodies := [][]byte{nil}
		if o.body != nil {
			bodies = w.bodies(t, o)
		}
		ok, records, lists := false, false, false
		var last string
		sent := 0
		for _, c := range combos {
			path := fillPath(o.path, c)
			if len(required) > 0 {
				path += "?" + required.Encode()
			}
			for _, body := range bodies {
				if sent >= maxCombinations {
					break
				}
				rec := w.Validator.Serve(t, w.Handler, w.request(o, path, body, "application/json"))
				requests, sent = requests+1, sent+1
				if rec.Code < 200 || rec.Code >= 300 {
					last = fmt.Sprintf("%s %s %s answered %d: %.300s", o.method, path, body, rec.Code, rec.Body)
					continue
				}
				ok = true
				var answer map[string]json.RawMessage
				if json.Unmarshal(rec.Body.Bytes(), &answer) == nil {
					if raw, isList := answer["records"]; isList {
						lists = true
						var items []json.RawMessage
						if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
							records = true
						}
					}
				}
				if o.csv && o.method == http.MethodGet {
					sep := "?"
					if strings.Contains(path, "?") {
						sep = "&"
					}
					requests++
					if rec := w.Validator.Serve(t, w.Handler, w.request(o, path+sep+"format=csv", nil, "")); rec.Code != http.StatusOK {
						t.Errorf("%s: GET %s?format=csv answered %d: %s", o.id, path, rec.Code, rec.Body)
					}
				}
			}
		}
		switch {
		case !ok && (o.method == http.MethodGet || !slices.Contains(w.Validator.Covered(), o.id)):
			t.Errorf("%s (%s): no request with %v answered 2xx; the last: %s", o.id, o, w.Values, last)
		case lists && !records:
			t.Errorf("%s (%s): every answer had an empty records list; the test's data does not reach it", o.id, o)
		}
	}
	t.Logf("kittest: the contract walk made %d requests over %d operations", requests, len(ops))
}

// CheckContract is the contract walk of a service's tests, on a handler holding its test data:
// CheckEveryOperation, then, for each of covered, that every documented operation under that path
// prefix has answered a validated 2xx (apitest's RequireCovered), then Fuzz with fuzz hostile
// requests.
func (w Walk) CheckContract(t testing.TB, fuzz int, covered ...string) {
	t.Helper()
	w.CheckEveryOperation(t)
	for _, prefix := range covered {
		w.Validator.RequireCovered(t, prefix)
	}
	w.Fuzz(t, fuzz)
}

// walk is the walk over the stack's services with values.
func (s *Stack) walk(values map[string][]string) Walk {
	return Walk{Handler: s.Handler(), Validator: s.Validator, Values: values, Serves: func(r *http.Request) bool {
		for _, inst := range s.instances {
			if inst.Serves(r) {
				return true
			}
		}
		return false
	}}
}

// CheckEveryOperation is Walk.CheckEveryOperation over the stack's services with values.
func (s *Stack) CheckEveryOperation(t testing.TB, values map[string][]string) {
	t.Helper()
	s.walk(values).CheckEveryOperation(t)
}

// CheckContract is Walk.CheckContract over the stack's services with values.
func (s *Stack) CheckContract(t testing.TB, values map[string][]string, fuzz int, covered ...string) {
	t.Helper()
	s.walk(values).CheckContract(t, fuzz, covered...)
}

// FuzzOperations is Walk.Fuzz over the stack's services with values.
func (s *Stack) FuzzOperations(t testing.TB, n int, values map[string][]string) {
	t.Helper()
	s.walk(values).Fuzz(t, n)
}

// bodies are the request bodies the contract walk sends to o, each once: Bodies[o.id], then bodies
// built from o's schema where the i-th takes the i-th candidate of each property that has
// candidates (cycling through shorter lists), then the documented examples.
func (w Walk) bodies(t testing.TB, o operation) [][]byte {
	t.Helper()
	var out [][]byte
	add := func(b []byte) {
		if !slices.ContainsFunc(out, func(o []byte) bool { return bytes.Equal(o, b) }) {
			out = append(out, b)
		}
	}
	for _, b := range w.Bodies[o.id] {
		add([]byte(b))
	}
	n := 1
	for name := range o.body.Properties {
		n = max(n, len(w.Values[name]))
	}
	for i := range min(n, maxCombinations) {
		v, _ := w.build(o.body, "", i, nil)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: encode a body: %v", o.id, err)
		}
		add(b)
	}
	for _, ex := range o.examples {
		b, err := json.Marshal(ex)
		if err != nil {
			t.Fatalf("%s: encode an example: %v", o.id, err)
		}
		add(b)
	}
	return out
}

// build makes a value of s for the property name: its i-th candidate in Values, else example (the
// enclosing object's example's value), else the schema's example, default or first enum value,
// else the least value of its type. An object has its required properties and those that have
// candidates or an example.
func (w Walk) build(s *openapi3.Schema, name string, i int, example any) (any, bool) {
	if vs := w.Values[name]; name != "" && len(vs) > 0 {
		return valueAs(s, vs[i%len(vs)]), true
	}
	if s.Type.Is(openapi3.TypeObject) || len(s.Properties) > 0 {
		ex, _ := example.(map[string]any)
		if ex == nil {
			ex, _ = s.Example.(map[string]any)
		}
		out := map[string]any{}
		for _, p := range slices.Sorted(maps.Keys(s.Properties)) {
			pv, has := ex[p]
			if !slices.Contains(s.Required, p) && !has && len(w.Values[p]) == 0 {
				continue
			}
			if v, ok := w.build(s.Properties[p].Value, p, i, pv); ok {
				out[p] = v
			}
		}
		return out, true
	}
	switch {
	case example != nil:
		return example, true
	case s.Example != nil:
		return s.Example, true
	case s.Default != nil:
		return s.Default, true
	case len(s.Enum) > 0:
		return s.Enum[0], true
	}
	for _, alt := range slices.Concat(s.AllOf, s.OneOf, s.AnyOf) {
		if v, ok := w.build(alt.Value, "", i, nil); ok {
			return v, true
		}
	}
	switch {
	case s.Type.Is(openapi3.TypeString):
		return strings.Repeat("x", int(max(s.MinLength, 1))), true
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		if s.Min != nil {
			if b := s.ExclusiveMin.Bool; b != nil && *b {
				return *s.Min + 1, true
			}
			return *s.Min, true
		}
		return 1, true
	case s.Type.Is(openapi3.TypeBoolean):
		return false, true
	case s.Type.Is(openapi3.TypeArray):
		items := []any{}
		for range s.MinItems {
			if v, ok := w.build(s.Items.Value, "", i, nil); ok {
				items = append(items, v)
			}
		}
		return items, true
	}
	return nil, false
}

// valueAs is a candidate value for a property of schema s: the string itself where s takes a
// string, else the value its JSON text reads as (the text when it is none).
func valueAs(s *openapi3.Schema, v string) any {
	if takesString(s) {
		return v
	}
	var out any
	if json.Unmarshal([]byte(v), &out) == nil {
		return out
	}
	return v
}

func takesString(s *openapi3.Schema) bool {
	if s.Type.Is(openapi3.TypeString) {
		return true
	}
	for _, alt := range slices.Concat(s.AllOf, s.OneOf, s.AnyOf) {
		if takesString(alt.Value) {
			return true
		}
	}
	return false
}
