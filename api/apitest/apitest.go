// Package apitest checks services' HTTP responses against tidemark's OpenAPI document in tests.
//
// A service test serves a request, hands the exchange to a Validator and gets a test failure naming the
// operation and the offending field when the response is not what the document promises:
//
//	v := apitest.New(t)
//	rec := v.Serve(t, handler, httptest.NewRequest(http.MethodGet, "/market/SOL-PERP/trades?limit=5", nil))
//	...
//	v.RequireCovered(t, "/market/") // every documented Market operation answered a validated 2xx
package apitest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tidemark/tidemark/api"
)

// kin-openapi keeps body decoders in a process-wide registry, so ours can only be installed there. Its
// stock text/csv decoder re-joins the parsed fields without quotes, which would hide the quoting the
// document's CSVFile pattern checks; this one checks the body is well-formed CSV and keeps it verbatim.
func init() {
	openapi3filter.RegisterBodyDecoder("text/csv", decodeCSV)
}

func decodeCSV(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read csv body: %w", err)
	}
	// Reading the whole file also checks every row has the header's number of fields.
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("malformed csv: %w", err)
	}
	if len(rows) == 0 {
		return nil, errors.New("csv body has no header row")
	}
	return string(data), nil
}

// Bounds on how much of a failing body, and of one offending value, a test failure prints.
const (
	maxBodyInMessage  = 2048
	maxValueInMessage = 160
)

// Validator validates request/response pairs against the OpenAPI document and remembers which
// operations answered with a validated 2xx response. It is safe for concurrent use by parallel tests.
type Validator struct {
	doc    *openapi3.T
	router routers.Router

	mu      sync.Mutex
	covered map[string]bool // operationId -> a 2xx response passed validation
}

// New loads and validates the document and builds its router; it fails the test if either fails.
func New(tb testing.TB) *Validator {
	tb.Helper()
	doc, err := api.Load()
	if err != nil {
		tb.Fatalf("apitest: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		tb.Fatalf("apitest: build router from the openapi document: %v", err)
	}
	return &Validator{doc: doc, router: router, covered: make(map[string]bool)}
}

// Check fails the test (without stopping it) when the exchange does not match the document: the route
// is not documented, the response status, Content-Type, headers or body disagree with the operation,
// or the service answered 2xx/3xx to a request the document rejects (bad parameters must get a 4xx).
//
// req is the request as sent; if it had a body, it must still be readable (see Serve).
func (v *Validator) Check(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	tb.Helper()
	if err := v.Validate(req, status, header, body); err != nil {
		// kin-openapi joins the errors of one body with " | "; one per line reads better in test output.
		msg := strings.ReplaceAll(err.Error(), " | ", "\n  ")
		tb.Errorf("apitest: %s\nresponse body: %s", msg, truncate(body, maxBodyInMessage))
	}
}

// CheckRecorder is Check for a response captured by an httptest.ResponseRecorder.
func (v *Validator) CheckRecorder(tb testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	tb.Helper()
	v.Check(tb, req, rec.Code, rec.Result().Header, rec.Body.Bytes())
}

// Serve runs req through h, checks the exchange and returns the recorded response. It keeps a copy of
// the request body so that bodies the handler consumes can still be validated.
func (v *Validator) Serve(tb testing.TB, h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	tb.Helper()
	if req.Body != nil && req.Body != http.NoBody {
		data, err := io.ReadAll(req.Body)
		if err != nil {
			tb.Fatalf("apitest: read request body: %v", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	v.CheckRecorder(tb, req, rec)
	return rec
}

// Validate is Check returning the mismatch instead of failing a test.
func (v *Validator) Validate(req *http.Request, status int, header http.Header, body []byte) error {
	ctx := req.Context()
	exchange := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), status)

	r := req.Clone(ctx)
	r.Body = http.NoBody
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			return fmt.Errorf("%s: reopen request body: %w", exchange, err)
		}
		r.Body = b
	}

	route, pathParams, err := v.router.FindRoute(r)
	if err != nil {
		return fmt.Errorf("%s: %s %s is not an operation of the openapi document: %w",
			exchange, req.Method, req.URL.Path, err)
	}
	op := route.Operation.OperationID
	exchange = fmt.Sprintf("%s (operation %s, path %s)", exchange, op, route.Path)

	reqInput := &openapi3filter.RequestValidationInput{
		Request:    r,
		PathParams: pathParams,
		Route:      route,
		Options:    options(openapi3filter.Options{SkipSettingDefaults: true}),
	}
	// A request the document rejects is fine as test input (it is how 400s get exercised), but only a
	// 4xx answer to it agrees with the document.
	if reqErr := openapi3filter.ValidateRequest(ctx, reqInput); reqErr != nil && status < http.StatusBadRequest {
		return fmt.Errorf("%s: the document rejects this request, so the service must answer 4xx: %w",
			exchange, reqErr)
	}

	respInput := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: reqInput,
		Status:                 status,
		Header:                 header,
		Options:                options(openapi3filter.Options{IncludeResponseStatus: true}),
	}
	respInput.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, respInput); err != nil {
		return fmt.Errorf("%s: response does not match the document: %w", exchange, err)
	}

	if status >= 200 && status < 300 {
		v.mu.Lock()
		v.covered[op] = true
		v.mu.Unlock()
	}
	return nil
}

// Covered returns, sorted, the operationIds that answered at least one 2xx response that passed
// validation.
func (v *Validator) Covered() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	ops := make([]string, 0, len(v.covered))
	for op := range v.covered {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// Uncovered returns, sorted, the operationIds of documented operations whose path starts with
// pathPrefix (e.g. "/market/") and that have not yet answered a validated 2xx response.
func (v *Validator) Uncovered(pathPrefix string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var ops []string
	for path, item := range v.doc.Paths.Map() {
		if !strings.HasPrefix(path, pathPrefix) {
			continue
		}
		for _, op := range item.Operations() {
			if !v.covered[op.OperationID] {
				ops = append(ops, op.OperationID)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// RequireCovered fails the test when some operation under pathPrefix has not answered a validated 2xx.
func (v *Validator) RequireCovered(tb testing.TB, pathPrefix string) {
	tb.Helper()
	if missing := v.Uncovered(pathPrefix); len(missing) > 0 {
		tb.Errorf("apitest: operations under %q never answered a validated 2xx response: %s",
			pathPrefix, strings.Join(missing, ", "))
	}
}

// options reports every mismatch of a body at once, each as a short line naming the JSON pointer, instead
// of kin-openapi's default of the first mismatch followed by the full schema.
func options(o openapi3filter.Options) *openapi3filter.Options {
	o.MultiError = true
	o.WithCustomSchemaErrorFunc(schemaErrorMessage)
	return &o
}

func schemaErrorMessage(err *openapi3.SchemaError) string {
	if err.Origin != nil {
		return "" // kin-openapi's own message carries the nested errors
	}
	reason := err.Reason
	if reason == "" {
		reason = fmt.Sprintf("does not match the schema's %q", err.SchemaField)
	}
	path := "/" + strings.Join(err.JSONPointer(), "/")
	if err.SchemaField == "required" {
		return fmt.Sprintf("at %q: %s", path, reason) // the value is the whole enclosing object
	}
	value, jerr := json.Marshal(err.Value)
	if jerr != nil {
		value = fmt.Appendf(nil, "%v", err.Value)
	}
	return fmt.Sprintf("at %q: %s (value %s)", path, reason, truncate(value, maxValueInMessage))
}

func truncate(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes in all)", b[:limit], len(b))
}
