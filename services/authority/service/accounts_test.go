package service_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

type accountList struct {
	Success  bool `json:"success"`
	Accounts []struct {
		AccountID    string `json:"accountId"`
		SubAccountID int    `json:"subAccountId"`
		Name         string `json:"name"`
	} `json:"accounts"`
	Builder *events.BuilderAccount     `json:"builderRevenueShareAccount"`
	Escrow  *events.RevenueShareEscrow `json:"revenueShareEscrow"`
}

// TestAccounts: a wallet's subaccounts by id, its builder account and escrow where it has them (null
// where not), the newest record carrying them winning whatever order they arrive in.
func TestAccounts(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	var got accountList
	s.GetJSON(t, "/authority/"+wallet+"/accounts", http.StatusOK, &got)
	if len(got.Accounts) != 2 || got.Accounts[0].AccountID != main || got.Accounts[0].SubAccountID != 0 ||
		got.Accounts[0].Name != "Main Account" || got.Accounts[1].AccountID != sub1 || got.Accounts[1].SubAccountID != 1 {
		t.Fatalf("accounts %+v", got.Accounts)
	}
	if got.Builder != nil || got.Escrow == nil || got.Escrow.AccountID != key(53) ||
		!reflect.DeepEqual(got.Escrow.ApprovedBuilders, []events.ApprovedBuilder{{Authority: builder, MaxFeeTenthBps: 25}}) {
		t.Fatalf("wallet's builder accounts: %+v %+v", got.Builder, got.Escrow)
	}
	s.GetJSON(t, "/authority/"+builder+"/accounts", http.StatusOK, &got)
	if got.Builder == nil || got.Builder.AccountID != key(54) || got.Builder.TotalBuilderRewards != "1500000" || got.Escrow != nil {
		t.Fatalf("builder's builder accounts: %+v %+v", got.Builder, got.Escrow)
	}
	// Without any: nulls, and an empty list for a wallet nobody knows.
	rec := s.Get(t, "/authority/"+stranger+"/accounts")
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil || string(raw["builderRevenueShareAccount"]) != "null" ||
		string(raw["revenueShareEscrow"]) != "null" || string(raw["accounts"]) != "[]" {
		t.Fatalf("a stranger's account list: %s", rec.Body)
	}

	// The builder earns more, and approves a second builder on a new subaccount's record; then an
	// older record (a replayed or late one) arrives: the newer state stays.
	t1 := at("2026-11-10T00:00:00Z")
	newer := newUser(builder, key(56), 1, t1)
	newer.BuilderRevenueShareAccount = &events.BuilderAccount{AccountID: key(54), TotalBuilderRewards: "9000000"}
	later := newUser(wallet, key(57), 2, t1)
	later.RevenueShareEscrow = &events.RevenueShareEscrow{AccountID: key(53), ApprovedBuilders: []events.ApprovedBuilder{
		{Authority: builder, MaxFeeTenthBps: 25}, {Authority: key(58), MaxFeeTenthBps: 100}}}
	older := newUser(builder, key(59), 2, at("2026-11-05T00:00:00Z"))
	older.BuilderRevenueShareAccount = &events.BuilderAccount{AccountID: key(54), TotalBuilderRewards: "3000000"}
	s.Ingest(t, encode(t, events.TopicNewUsers, newer, later)...)
	s.Ingest(t, encode(t, events.TopicNewUsers, older)...)
	s.GetJSON(t, "/authority/"+builder+"/accounts", http.StatusOK, &got)
	if got.Builder.TotalBuilderRewards != "9000000" || len(got.Accounts) != 3 {
		t.Fatalf("builder after updates: %+v, %d accounts", got.Builder, len(got.Accounts))
	}
	s.GetJSON(t, "/authority/"+wallet+"/accounts", http.StatusOK, &got)
	if len(got.Escrow.ApprovedBuilders) != 2 || got.Accounts[2].AccountID != key(57) {
		t.Fatalf("wallet after updates: %+v, %+v", got.Escrow, got.Accounts)
	}
	// An account known only from snapshots has series but is no listed account.
	s.Ingest(t, encode(t, events.TopicAccountSnapshots, trading(key(55), now.Unix()-60, 1))...)
	s.GetJSON(t, "/authority/"+wallet+"/accounts", http.StatusOK, &got)
	if len(got.Accounts) != 3 {
		t.Fatalf("%d accounts after a snapshot of an unlisted one", len(got.Accounts))
	}
}
