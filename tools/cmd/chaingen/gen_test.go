package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// driftDir is the generated package, from this folder.
const driftDir = "../../../platform/chain/drift"

// TestGeneratedIsCurrent fails when the committed code is not what the IDL gives today: after a
// change to the IDL copy or to the generator, run make generate.
func TestGeneratedIsCurrent(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(driftDir, "idl.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Generate(src, Config{Package: "drift", IDLFile: "idl.json", Accounts: strings.Split(defaultAccounts, ","), Instructions: strings.Split(defaultInstructions, ",")})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("nothing generated")
	}
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(driftDir, f.Name))
		if err != nil {
			t.Fatalf("%v: run make generate", err)
		}
		if !bytes.Equal(got, f.Content) {
			t.Errorf("%s is stale: run make generate", f.Name)
		}
	}
}

func TestGoName(t *testing.T) {
	cases := []struct{ idl, want string }{
		{"ts", "TS"},
		{"fillRecordId", "FillRecordID"},
		{"lastMarkPriceTwapTs", "LastMarkPriceTwapTS"},
		{"signedMsgOrderUuid", "SignedMsgOrderUUID"},
		{"baseAssetAmountWithAmm", "BaseAssetAmountWithAmm"},
		{"last24hAvgFundingRate", "Last24hAvgFundingRate"},
		{"idle", "Idle"},
		{"tsOffset", "TSOffset"},
		{"padding1", "Padding1"},
	}
	for _, c := range cases {
		if got := goName(c.idl); got != c.want {
			t.Errorf("goName(%q) = %q, want %q", c.idl, got, c.want)
		}
	}
}

func TestGenerateRefuses(t *testing.T) {
	cases := []struct{ name, idl string }{
		{"not JSON", `{`},
		{"unknown primitive", `{"events":[{"name":"E","fields":[{"name":"a","type":"u256"}]}]}`},
		{"undefined type", `{"events":[{"name":"E","fields":[{"name":"a","type":{"defined":"Nope"}}]}]}`},
		{"enum with data", `{"events":[{"name":"E","fields":[{"name":"a","type":{"defined":"X"}}]}],
			"types":[{"name":"X","type":{"kind":"enum","variants":[{"name":"V","fields":["u8"]}]}}]}`},
		{"reserved field", `{"events":[{"name":"E","fields":[{"name":"absent","type":"u8"}]}]}`},
		{"event without fields", `{"events":[{"name":"E","fields":[]}]}`},
		{"missing account", `{"events":[]}`},
	}
	for _, c := range cases {
		if _, err := Generate([]byte(c.idl), Config{Package: "p", IDLFile: "idl.json", Accounts: []string{"User"}}); err == nil {
			t.Errorf("%s: generated", c.name)
		}
	}
}

func TestSnakeName(t *testing.T) {
	cases := []struct{ idl, want string }{
		{"deposit", "deposit"},
		{"placeOrders", "place_orders"},
		{"updateUserPerpPositionCustomMarginRatio", "update_user_perp_position_custom_margin_ratio"},
		{"settleMultiplePnls", "settle_multiple_pnls"},
		{"cancelOrdersByIds", "cancel_orders_by_ids"},
		{"initializeRevenueShareEscrow", "initialize_revenue_share_escrow"},
		{"liquidatePerpPnlForDeposit", "liquidate_perp_pnl_for_deposit"},
		{"updateSpotMarketIfFactor", "update_spot_market_if_factor"},
	}
	for _, c := range cases {
		if got := snakeName(c.idl); got != c.want {
			t.Errorf("snakeName(%q) = %q, want %q", c.idl, got, c.want)
		}
	}
}

func TestGenerateRefusesInstructions(t *testing.T) {
	cases := []struct{ name, idl string }{
		{"missing instruction", `{"instructions":[]}`},
		{"error code twice", `{"errors":[{"code":6000,"name":"A","msg":"a"},{"code":6000,"name":"B","msg":"b"}],"instructions":[{"name":"ix","accounts":[],"args":[]}]}`},
		{"error without name", `{"errors":[{"code":6000,"msg":"a"}],"instructions":[{"name":"ix","accounts":[],"args":[]}]}`},
		{"nested accounts", `{"instructions":[{"name":"ix","accounts":[{"name":"g","accounts":[{"name":"a","isMut":false,"isSigner":false}]}],"args":[]}]}`},
		{"optional account", `{"instructions":[{"name":"ix","accounts":[{"name":"a","isMut":false,"isSigner":false,"isOptional":true}],"args":[]}]}`},
		{"account twice", `{"instructions":[{"name":"ix","accounts":[{"name":"a","isMut":false,"isSigner":false},{"name":"a","isMut":true,"isSigner":false}],"args":[]}]}`},
		{"undefined argument type", `{"instructions":[{"name":"ix","accounts":[],"args":[{"name":"a","type":{"defined":"Nope"}}]}]}`},
		{"name clash", `{"instructions":[{"name":"ix","accounts":[],"args":[]}],"types":[{"name":"IxArgs","type":{"kind":"struct","fields":[]}}]}`},
	}
	for _, c := range cases {
		if _, err := Generate([]byte(c.idl), Config{Package: "p", IDLFile: "idl.json", Instructions: []string{"ix"}}); err == nil {
			t.Errorf("%s: generated", c.name)
		}
	}
}

// TestGenerateValid checks that the refusal cases above fail for their own reason: the same IDL
// without the fault generates.
func TestGenerateValid(t *testing.T) {
	idl := `{"errors":[{"code":6000,"name":"A","msg":"a"}],"instructions":[{"name":"ix","accounts":[{"name":"a","isMut":true,"isSigner":false}],"args":[{"name":"n","type":"u16"}]}]}`
	files, err := Generate([]byte(idl), Config{Package: "p", IDLFile: "idl.json", Instructions: []string{"ix"}})
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		all = append(all, f.Content...)
	}
	for _, want := range []string{"func NewIxInstruction(args IxArgs, accounts IxAccounts, remaining ...solana.AccountMeta)", `{Code: 6000, Name: "A", Msg: "a"}`} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("generated code lacks %s", want)
		}
	}
}
