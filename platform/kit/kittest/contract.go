package kittest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/tidemark/tidemark/api"
)

var docParam = regexp.MustCompile(`\{([^}]+)\}`)

// operation is a GET operation of the document.
type operation struct {
	id     string
	path   string   // the template, /market/{symbol}/trades
	params []string // its path parameters, in order
	query  []*openapi3.Parameter
	csv    bool // it answers format=csv too
}

// operations lists the document's GET operations that the stack's services serve, judged by whether
// a route of theirs matches the path with the first candidate of every parameter.
func (s *Stack) operations(t testing.TB, values map[string][]string) []operation {
	t.Helper()
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		op := item.Get
		if op == nil {
			continue
		}
		o := operation{id: op.OperationID, path: path}
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
		sample := map[string]string{}
		for _, p := range o.params {
			sample[p] = "x"
			if vs := values[p]; len(vs) > 0 {
				sample[p] = vs[0]
			}
		}
		req := httptest.NewRequest(http.MethodGet, fillPath(path, sample), nil)
		for _, inst := range s.instances {
			if inst.Serves(req) {
				out = append(out, o)
				break
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

// CheckEveryOperation walks every GET operation of the OpenAPI document that the stack serves: it
// requests each with every combination of the candidate values of its path parameters (and, where the
// operation has one, with format=csv too), validates every answer against the document, and fails the
// test for an operation that never answered a validated 2xx, or whose list answers were all empty
// (the test's data left it unchecked). Query parameters keep their defaults, but for the required
// ones, which take the first candidate of values under their name.
func (s *Stack) CheckEveryOperation(t testing.TB, values map[string][]string) {
	t.Helper()
	ops := s.operations(t, values)
	if len(ops) == 0 {
		t.Fatal("the stack serves no operation of the document")
	}
	for _, o := range ops {
		combos := []map[string]string{{}}
		for _, p := range o.params {
			vs := values[p]
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
		ok, records, lists := false, false, false
		required := url.Values{}
		for _, p := range o.query {
			if p.Required {
				if vs := values[p.Name]; len(vs) > 0 {
					required.Set(p.Name, vs[0])
				} else {
					t.Errorf("%s: no candidate value for the required query parameter %s", o.id, p.Name)
				}
			}
		}
		for _, c := range combos {
			path := fillPath(o.path, c)
			if len(required) > 0 {
				path += "?" + required.Encode()
			}
			rec := s.Get(t, path)
			if rec.Code < 200 || rec.Code >= 300 {
				continue
			}
			ok = true
			var body map[string]json.RawMessage
			if json.Unmarshal(rec.Body.Bytes(), &body) == nil {
				if raw, isList := body["records"]; isList {
					lists = true
					var items []json.RawMessage
					if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
						records = true
					}
				}
			}
			if o.csv {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				if rec := s.Get(t, path+sep+"format=csv"); rec.Code != http.StatusOK {
					t.Errorf("%s: GET %s?format=csv answered %d: %s", o.id, path, rec.Code, rec.Body)
				}
			}
		}
		switch {
		case !ok:
			t.Errorf("%s (%s): no combination of %v answered 2xx", o.id, o.path, values)
		case lists && !records:
			t.Errorf("%s (%s): every answer had an empty records list; the test's data does not reach it", o.id, o.path)
		}
	}
}

// CheckContract is the contract walk of a service's tests, on a stack holding its test data:
// CheckEveryOperation over values, then, for each of covered, that every documented operation under
// that path prefix has answered a validated 2xx (apitest's RequireCovered), then FuzzOperations with
// fuzz hostile requests.
func (s *Stack) CheckContract(t testing.TB, values map[string][]string, fuzz int, covered ...string) {
	t.Helper()
	s.CheckEveryOperation(t, values)
	for _, prefix := range covered {
		s.Validator.RequireCovered(t, prefix)
	}
	s.FuzzOperations(t, fuzz, values)
}

// hostile are path and query values a client may send: malformed encodings, control characters,
// overlong, numeric edge cases, injection attempts.
var hostile = []string{
	"", " ", "\x00", "a\x00b", "\xf6c\xc4\x9f", "\xff", "%", "%00", "../../etc/passwd", "a/b", "..", ".",
	"' OR '1'='1", `"`, `\`, "<script>", "SOL-PERP\n", "\t", "sol-perp", strings.Repeat("A", 300),
	strings.Repeat("Ω", 100), "😀", "\u202e", "-1", "0", "1.5", "1e9", "0x10", "99999999999999999999999",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "NaN", "null", "true", "[]", "{}",
	"eyJ0IjoxfQ", "AQ==", strings.Repeat("z", 5000),
}

// FuzzOperations sends n requests with hostile path and query values to the GET operations the stack
// serves (chosen in turn, values drawn from hostile and from values with a fixed seed) and fails the
// test on any answer of 500 or more: bad input is the client's fault, whatever it is.
func (s *Stack) FuzzOperations(t testing.TB, n int, values map[string][]string) {
	t.Helper()
	ops := s.operations(t, values)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(name string) string {
		if vs := values[name]; len(vs) > 0 && rng.IntN(2) == 0 {
			return vs[rng.IntN(len(vs))]
		}
		return hostile[rng.IntN(len(hostile))]
	}
	h := s.Handler()
	failures := 0
	for i := range n {
		o := ops[i%len(ops)]
		vals := map[string]string{}
		for _, p := range o.params {
			vals[p] = pick(p)
		}
		q := url.Values{}
		for _, p := range o.query {
			if rng.IntN(2) == 0 {
				q.Set(p.Name, pick(p.Name))
			}
		}
		if rng.IntN(8) == 0 {
			q.Set(pick("param"), pick("value"))
		}
		target := fillPath(o.path, vals)
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code >= 500 {
			failures++
			if failures <= 20 {
				t.Errorf("%s: GET %s answered %d: %s", o.id, target, rec.Code, rec.Body)
			}
		}
	}
	if failures > 20 {
		t.Errorf("%d answers of %d were 5xx", failures, n)
	}
	if testing.Verbose() {
		fmt.Printf("kittest: %d hostile requests over %d operations\n", n, len(ops))
	}
}
