package service_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// authorityValues are candidate values of the Authority operations' path parameters, for seed's data.
var authorityValues = map[string][]string{
	"authorityId": {wallet, builder},
	"year":        {"2026"},
	"month":       {"11"},
}

// TestEveryOperationOfTheDocument walks every Authority operation of api/openapi.yaml with the seeded
// data (an export requested first, so its list has a record) and validates every answer, then sends
// hostile values to all of them: no answer may be a server error.
func TestEveryOperationOfTheDocument(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	s.createExport(t, wallet, `{"fileType":"if-stake-records","from":1763000000,"to":1763600000,"userPublicKeys":["`+main+`"]}`)
	s.CheckContract(t, authorityValues, 3000, "/authority/")
}

// TestLimitsAndErrors checks every refusal of the Authority GET routes, and that a wallet nothing
// happened to answers empty lists and series of nulls, not an error.
func TestLimitsAndErrors(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	s.CheckRefusals(t, []kittest.Refusal{
		{Path: "/authority/not-a-key/insuranceFundStake", Status: 400, Message: "authorityId must be a wallet's public key"},
		{Path: "/authority/" + strings.Repeat("1", 45) + "/accounts", Status: 400, Message: "authorityId"},
		{Path: "/authority/Acct0000000000000000000000000000000000000000/lpMintRedeem", Status: 400, Message: "authorityId"},
		{Path: "/authority/x/snapshots/overview", Status: 400, Message: "authorityId"},
		{Path: "/authority/x/exports", Status: 400, Message: "authorityId"},
		{Path: "/authority/" + wallet + "/insuranceFundStake/2027/01", Status: 400, Message: "2027-01 is in the future"},
		{Path: "/authority/" + wallet + "/lpMintRedeem/2021/12", Status: 400, Message: "year must be an integer >= 2022"},
		{Path: "/authority/" + wallet + "/lpMintRedeem/2026/13", Status: 400, Message: "month must be an integer between 1 and 12"},
		{Path: "/authority/" + wallet + "/insuranceFundStake/2026/11?format=xml", Status: 400, Message: "format must be one of json, csv"},
		{Path: "/authority/" + wallet + "/insuranceFundStake?page=bogus", Status: 400, Message: "Invalid page token"},
		{Path: "/authority/" + wallet + "/exports?page=bogus", Status: 400, Message: "Invalid page token"},
		{Path: "/authority/" + wallet + "/snapshots/overview?days=0", Status: 400, Message: "days must be an integer between 1 and 100"},
		{Path: "/authority/" + wallet + "/snapshots/referrals?days=101", Status: 400, Message: "days must be an integer between 1 and 100"},
		{Path: "/authority/" + wallet + "/snapshots/trading?days=two", Status: 400, Message: "days must be an integer between 1 and 100"},
	})
	// A token of one wallet's list is no token of another's.
	p := getList(t, s, "/authority/"+wallet+"/insuranceFundStake")
	if len(p.Records) != 2 {
		t.Fatalf("%d stakes of the wallet, want 2", len(p.Records))
	}
	nobody := key(77)
	for _, path := range []string{"/insuranceFundStake", "/lpMintRedeem", "/exports", "/insuranceFundStake/2026/11"} {
		if l := getList(t, s, "/authority/"+nobody+path); len(l.Records) != 0 {
			t.Errorf("%s of an unknown wallet: %d records", path, len(l.Records))
		}
	}
	var over overview
	s.GetJSON(t, "/authority/"+nobody+"/snapshots/overview", http.StatusOK, &over)
	if len(over.Products.Trade) != 0 || len(over.Products.Earn) != 0 || len(over.Products.Vaults) != 0 {
		t.Errorf("an unknown wallet has series: %+v", over)
	}
	var refs series
	s.GetJSON(t, "/authority/"+nobody+"/snapshots/referrals?days=3", http.StatusOK, &refs)
	if len(refs.Snapshots) != 3 || refs.Snapshots[0] != nil || refs.Snapshots[2] != nil {
		t.Errorf("referrals of an unknown wallet: %v", refs.Snapshots)
	}
}

// The stake and LP series are the wallet's records only, newest first, and the dated archive as CSV.
func TestStakeAndLPSeries(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	stakes := kittest.Records[events.IFStake](t, getList(t, s, "/authority/"+wallet+"/insuranceFundStake").Records)
	if len(stakes) != 2 || stakes[0].Ts <= stakes[1].Ts || stakes[0].UserAuthority != wallet || stakes[1].Symbol != "USDC" {
		t.Fatalf("stakes %+v", stakes)
	}
	lps := kittest.Records[events.LPMintRedeem](t, getList(t, s, "/authority/"+wallet+"/lpMintRedeem/2026/11").Records)
	if len(lps) != 2 || lps[0].Ts >= lps[1].Ts || lps[0].Authority != wallet {
		t.Fatalf("dated LP records %+v", lps)
	}
	rec := s.Get(t, "/authority/"+wallet+"/insuranceFundStake/2026/11?format=csv")
	lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
	if rec.Code != 200 || len(lines) != 3 || !strings.HasPrefix(lines[0], `"ts","txSig"`) ||
		!strings.Contains(rec.Header().Get("Content-Disposition"), "authority-"+wallet+"-insuranceFundStake-2026-11.csv") {
		t.Fatalf("CSV: %d %q\n%s", rec.Code, rec.Header().Get("Content-Disposition"), rec.Body)
	}
}

// list is a page of any list.
type list struct {
	Success bool              `json:"success"`
	Records []json.RawMessage `json:"records"`
}

func getList(t *testing.T, s *stack, path string) list {
	t.Helper()
	var l list
	s.GetJSON(t, path, http.StatusOK, &l)
	return l
}

// point is one snapshot entry of any kind, as far as the tests look.
type point struct {
	Ts             int64  `json:"ts"`
	AccountBalance string `json:"accountBalance"`
	ReferralCount  string `json:"referralCount"`
	Vault          string `json:"vault"`
}

type accountSeries struct {
	AccountID string             `json:"accountId"`
	Snapshots []*point           `json:"snapshots"`
	Metrics   *map[string]string `json:"metrics"`
}

type overview struct {
	Products struct {
		Trade, Earn, Vaults []accountSeries
	} `json:"products"`
}

type series struct {
	Accounts  []accountSeries `json:"accounts"`
	Snapshots []*point        `json:"snapshots"`
}
