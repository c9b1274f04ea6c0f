package kittest

import (
	"encoding/json"
	"testing"
)

// Records decodes each record of a list's page (its "records", kept raw) as a T, failing the test
// on the first that is not one.
func Records[T any](t testing.TB, raw []json.RawMessage) []T {
	t.Helper()
	out := make([]T, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("record %s: %v", r, err)
		}
	}
	return out
}
