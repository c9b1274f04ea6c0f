package api_test

import (
	"net/http"
	"slices"
	"testing"
)

// authorityOperations are the Authority group's operations; none has a path value that can be unknown,
// so none documents 404.
var authorityOperations = []struct {
	method string
	path   string
	id     string
	kind   kind
	schema string // response schema of 200 application/json
}{
	{http.MethodGet, "/authority/{authorityId}/insuranceFundStake", "getAuthorityInsuranceFundStake", rolling, "IFStakeList"},
	{http.MethodGet, "/authority/{authorityId}/insuranceFundStake/{year}/{month}", "getAuthorityInsuranceFundStakeByMonth", datedMonth, "IFStakeDatedList"},
	{http.MethodGet, "/authority/{authorityId}/lpMintRedeem", "getAuthorityLPMintRedeem", rolling, "LPMintRedeemList"},
	{http.MethodGet, "/authority/{authorityId}/lpMintRedeem/{year}/{month}", "getAuthorityLPMintRedeemByMonth", datedMonth, "LPMintRedeemDatedList"},
	{http.MethodPost, "/authority/{authorityId}/exports", "createAuthorityExport", single, "ExportCreated"},
	{http.MethodGet, "/authority/{authorityId}/exports", "getAuthorityExports", rolling, "ExportJobList"},
	{http.MethodGet, "/authority/{authorityId}/snapshots/overview", "getAuthoritySnapshotsOverview", snapshots, "AuthoritySnapshotsOverview"},
	{http.MethodGet, "/authority/{authorityId}/snapshots/trading", "getAuthorityTradingSnapshots", snapshots, "AuthorityTradingSnapshots"},
	{http.MethodGet, "/authority/{authorityId}/snapshots/earn", "getAuthorityEarnSnapshots", snapshots, "AuthorityEarnSnapshots"},
	{http.MethodGet, "/authority/{authorityId}/snapshots/vaults", "getAuthorityVaultSnapshots", snapshots, "AuthorityVaultSnapshots"},
	{http.MethodGet, "/authority/{authorityId}/snapshots/referrals", "getAuthorityReferralSnapshots", snapshots, "ReferralSnapshots"},
	{http.MethodGet, "/authority/{authorityId}/accounts", "getAuthorityAccounts", single, "AuthorityAccounts"},
}

func TestAuthorityOperations(t *testing.T) {
	doc := mustLoad(t)
	for _, tc := range authorityOperations {
		t.Run(tc.id, func(t *testing.T) {
			item, op := operationOf(t, doc, tc.method, tc.path, tc.id)
			checkDocumented(t, op, []string{"Authority"}, 400, 500, 503)
			ok := checkAnswer(t, op, 200, tc.schema)
			checkCSV(t, ok, tc.kind == datedMonth)
			params := parameters(item, op)
			checkKey(t, params, "authorityId")
			switch tc.kind {
			case rolling:
				checkQuery(t, params, "page")
			case datedMonth:
				checkQuery(t, params, "format", "page")
				checkDated(t, params)
			case snapshots:
				checkQuery(t, params, "days")
				checkRange(t, params["query:days"], 1, ptr(100))
			default:
				checkQuery(t, params)
			}
			if tc.method == http.MethodPost {
				body := op.RequestBody
				if body == nil || !body.Value.Required || body.Value.Content.Get("application/json") == nil ||
					body.Value.Content.Get("application/json").Schema.Ref != "#/components/schemas/ExportRequest" {
					t.Errorf("the export request body must be a required ExportRequest")
				}
			}
		})
	}
}

// The export request and job are the spec's tables, field for field.
func TestExportSchemas(t *testing.T) {
	doc := mustLoad(t)
	fileTypes := []any{"trades", "market-trades", "funding-rates", "funding-payments", "deposits", "liquidations",
		"settle-pnl-records", "lp-records", "if-stake-records", "swap-records", "rewards"}
	req := doc.Components.Schemas["ExportRequest"].Value
	if req.AdditionalProperties.Has == nil || *req.AdditionalProperties.Has {
		t.Errorf("ExportRequest must refuse extra properties")
	}
	if got := slices.Sorted(slices.Values(req.Required)); !slices.Equal(got, []string{"fileType", "from", "to", "userPublicKeys"}) {
		t.Errorf("ExportRequest required = %v", got)
	}
	if !slices.Equal(req.Properties["fileType"].Value.Enum, fileTypes) {
		t.Errorf("fileType enum = %v", req.Properties["fileType"].Value.Enum)
	}
	for _, name := range []string{"from", "to"} {
		if p := req.Properties[name].Value; !p.Type.Is("integer") || p.Min == nil || *p.Min != 0 {
			t.Errorf("%s must be an integer >= 0", name)
		}
	}
	if k := req.Properties["userPublicKeys"].Value; !k.Type.Is("array") || k.MinItems != 1 {
		t.Errorf("userPublicKeys must have at least 1 item")
	}
	if m := req.Properties["market"].Value; !m.Type.Is("string") || !m.Nullable {
		t.Errorf("market must be a nullable string")
	}
	job := doc.Components.Schemas["ExportJob"].Value
	wantJob := []string{"completedAt", "createdAt", "downloadUrl", "errorReason", "fileType", "from", "market", "recordCount",
		"requestId", "status", "to", "userPublicKeys"}
	if got := slices.Sorted(slices.Values(job.Required)); !slices.Equal(got, wantJob) {
		t.Errorf("ExportJob required = %v, want %v", got, wantJob)
	}
	for _, name := range []string{"market", "completedAt", "recordCount", "errorReason", "downloadUrl"} {
		if !job.Properties[name].Value.Nullable {
			t.Errorf("ExportJob.%s must be nullable", name)
		}
	}
	if !slices.Equal(job.Properties["status"].Value.Enum, []any{"pending", "running", "ready", "failed", "expired"}) {
		t.Errorf("status enum = %v", job.Properties["status"].Value.Enum)
	}
	lp := doc.Components.Schemas["LPMintRedeem"].Value
	wantLP := []string{"amount", "authority", "constituentIndex", "description", "fee", "inMarketCurrentWeight", "inMarketTargetWeight",
		"lastAum", "lastAumSlot", "lpAmount", "lpFee", "lpPool", "lpPrice", "mint", "mintRedeemId", "oraclePrice", "slot",
		"spotMarketIndex", "ts", "txSig", "txSigIndex"}
	if got := slices.Sorted(slices.Values(lp.Required)); !slices.Equal(got, wantLP) || len(lp.Properties) != len(wantLP) {
		t.Errorf("LPMintRedeem required = %v, want %v", got, wantLP)
	}
}
