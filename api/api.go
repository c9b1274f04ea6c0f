// Package api holds tidemark's interface contract: the OpenAPI document every service is tested against
// and that the services serve at GET /openapi.json.
package api

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"
)

//go:embed openapi.yaml
var document []byte

//go:embed asyncapi.yaml
var asyncDocument []byte

// AsyncAPIJSON returns the WebSocket protocol's AsyncAPI document (asyncapi.yaml) as JSON.
var AsyncAPIJSON = sync.OnceValues(func() ([]byte, error) {
	return toJSON(asyncDocument)
})

// jsonDocument converts the embedded YAML once per process: the document never changes at run time,
// and every service serves the JSON form on each GET /openapi.json.
var jsonDocument = sync.OnceValues(func() ([]byte, error) {
	return toJSON(document)
})

// YAML returns the OpenAPI document as written (a copy: callers may not alter the embedded bytes).
func YAML() []byte {
	return bytes.Clone(document)
}

// JSON returns the OpenAPI document converted to JSON, as served at GET /openapi.json.
func JSON() ([]byte, error) {
	b, err := jsonDocument()
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// Load parses the document with kin-openapi and validates it (schemas, references, examples).
func Load() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("api: load openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api: validate openapi.yaml: %w", err)
	}
	return doc, nil
}

func toJSON(src []byte) ([]byte, error) {
	var root any
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, fmt.Errorf("api: parse openapi.yaml: %w", err)
	}
	b, err := json.Marshal(jsonValue(root))
	if err != nil {
		return nil, fmt.Errorf("api: encode openapi.json: %w", err)
	}
	return b, nil
}

// jsonValue turns yaml.v3's generic values into ones encoding/json accepts: yaml.v3 yields
// map[any]any for mappings whose keys are not all strings (e.g. unquoted status codes).
func jsonValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = jsonValue(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jsonValue(e)
		}
		return out
	default:
		return v
	}
}
