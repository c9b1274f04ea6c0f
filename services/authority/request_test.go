package authority_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/services/authority"
)

const account = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"

// Any body either parses into a request the ExportJob resource accepts, or is refused as the
// client's fault with a message: never a panic, never an internal error.
func FuzzParseExportRequest(f *testing.F) {
	for _, seed := range []string{
		`{"fileType":"trades","from":1,"to":2,"userPublicKeys":["` + account + `"]}`,
		`{"fileType":"market-trades","from":0,"to":31622400,"userPublicKeys":["` + account + `"],"market":"SOL-PERP"}`,
		`{"fileType":"funding-rates","from":1,"to":2,"userPublicKeys":["` + account + `"],"market":null}`,
		`{"fileType":"trades","from":1e3,"to":-0,"userPublicKeys":[null],"x":{}}`,
		`{"from":9223372036854775808,"to":"1"}`, `[]`, `{}`, `{"a":1,"a":2}`, ``, `{`, `"`, `{"userPublicKeys":{}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := authority.ParseExportRequest(body)
		if err != nil {
			if fault.CodeOf(err) != fault.Invalid || fault.MessageOf(err) == "" {
				t.Fatalf("%q: %v is no client error", body, err)
			}
			return
		}
		if verr := req.Spec("9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin").Validate(); verr != nil {
			t.Fatalf("%q parsed into a spec the resource refuses: %v", body, verr)
		}
		// What parses is a JSON object.
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			t.Fatalf("%q parsed but is no JSON object", body)
		}
	})
}

func TestParseExportRequest(t *testing.T) {
	req, err := authority.ParseExportRequest([]byte(`{"userPublicKeys":["` + account + `"],"to":20,"from":10,` +
		`"fileType":"if-stake-records","market":"USDC"}`))
	if err != nil || req.FileType != "if-stake-records" || req.From != 10 || req.To != 20 || *req.Market != "USDC" ||
		strings.Join(req.UserPublicKeys, ",") != account {
		t.Fatalf("ParseExportRequest = %+v, %v", req, err)
	}
}
