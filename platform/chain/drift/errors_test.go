package drift_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
)

func TestErrorByCode(t *testing.T) {
	cases := []struct {
		code     uint32
		wantName string
		wantOK   bool
	}{
		{6000, "InvalidSpotMarketAuthority", true},
		{6003, "InsufficientCollateral", true},
		{6348, "InvalidPerpMarketConfig", true},
		{5999, "", false},
		{6349, "", false},
		{0, "", false},
	}
	for _, c := range cases {
		got, ok := drift.ErrorByCode(c.code)
		if ok != c.wantOK || got.Name != c.wantName {
			t.Errorf("ErrorByCode(%d) = %+v, %v; want %s, %v", c.code, got, ok, c.wantName, c.wantOK)
		}
		if ok && got.Code != c.code {
			t.Errorf("ErrorByCode(%d) has code %d", c.code, got.Code)
		}
	}
	e, _ := drift.ErrorByCode(6003)
	if want := "drift: program error 6003 InsufficientCollateral: Insufficient collateral"; e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
}

// TestErrorByCodeEveryIDLError looks every error of the IDL up by its code.
func TestErrorByCodeEveryIDLError(t *testing.T) {
	src, err := os.ReadFile("idl.json")
	if err != nil {
		t.Fatal(err)
	}
	var idl struct {
		Errors []drift.Error `json:"errors"`
	}
	if err := json.Unmarshal(src, &idl); err != nil {
		t.Fatal(err)
	}
	if len(idl.Errors) < 300 {
		t.Fatalf("the IDL has %d errors", len(idl.Errors))
	}
	for _, want := range idl.Errors {
		got, ok := drift.ErrorByCode(want.Code)
		if !ok || got != want {
			t.Errorf("ErrorByCode(%d) = %+v, %v; want %+v", want.Code, got, ok, want)
		}
	}
}
