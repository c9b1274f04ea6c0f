package events_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/api"
	"github.com/tidemark/tidemark/platform/events"
)

// liquidationFields are the fields of every liquidation record in the API's order
// (shared/reference/real-api-facts.md, "Liquidation (flat, prefixed sub-records)").
var liquidationFields = strings.Fields(`ts txSig txSigIndex slot
	liquidationType user liquidator marginRequirement totalCollateral marginFreed liquidationId bankrupt
	canceledOrderIds bitFlags
	liquidatePerp_marketIndex liquidatePerp_oraclePrice liquidatePerp_baseAssetAmount liquidatePerp_quoteAssetAmount
	liquidatePerp_lpShares liquidatePerp_fillRecordId liquidatePerp_userOrderId liquidatePerp_liquidatorOrderId
	liquidatePerp_liquidatorFee liquidatePerp_ifFee
	liquidateSpot_assetMarketIndex liquidateSpot_assetPrice liquidateSpot_assetTransfer
	liquidateSpot_liabilityMarketIndex liquidateSpot_liabilityPrice liquidateSpot_liabilityTransfer liquidateSpot_ifFee
	liquidateBorrowForPerpPnl_perpMarketIndex liquidateBorrowForPerpPnl_marketOraclePrice
	liquidateBorrowForPerpPnl_pnlTransfer liquidateBorrowForPerpPnl_liabilityMarketIndex
	liquidateBorrowForPerpPnl_liabilityPrice liquidateBorrowForPerpPnl_liabilityTransfer
	liquidatePerpPnlForDeposit_perpMarketIndex liquidatePerpPnlForDeposit_marketOraclePrice
	liquidatePerpPnlForDeposit_pnlTransfer liquidatePerpPnlForDeposit_assetMarketIndex
	liquidatePerpPnlForDeposit_assetPrice liquidatePerpPnlForDeposit_assetTransfer
	perpBankruptcy_marketIndex perpBankruptcy_pnl perpBankruptcy_ifPayment perpBankruptcy_clawbackUser
	perpBankruptcy_clawbackUserPayment perpBankruptcy_cumulativeFundingRateDelta
	spotBankruptcy_marketIndex spotBankruptcy_borrowAmount spotBankruptcy_ifPayment
	spotBankruptcy_cumulativeDepositInterestDelta`)

// liquidationTypes are the six liquidation types with the fields each sets and their JSON values in
// the sample liquidationOf makes: the type's own sub-record and nothing of the others.
var liquidationTypes = []struct {
	kind string
	own  map[string]any
}{
	{events.LiquidationTypePerp, map[string]any{
		"liquidatePerp_marketIndex": 1.0, "liquidatePerp_oraclePrice": "150000000",
		"liquidatePerp_baseAssetAmount": "-15740000000", "liquidatePerp_quoteAssetAmount": "1803723301",
		"liquidatePerp_lpShares": "0", "liquidatePerp_fillRecordId": "123457", "liquidatePerp_userOrderId": "12",
		"liquidatePerp_liquidatorOrderId": "3", "liquidatePerp_liquidatorFee": "9000000", "liquidatePerp_ifFee": "900000",
	}},
	{events.LiquidationTypeSpot, map[string]any{
		"liquidateSpot_assetMarketIndex": 1.0, "liquidateSpot_assetPrice": "155000000",
		"liquidateSpot_assetTransfer": "3300000000", "liquidateSpot_liabilityMarketIndex": 0.0,
		"liquidateSpot_liabilityPrice": "1000000", "liquidateSpot_liabilityTransfer": "500000000",
		"liquidateSpot_ifFee": "2500000",
	}},
	{events.LiquidationTypeBorrowForPerpPnl, map[string]any{
		"liquidateBorrowForPerpPnl_perpMarketIndex": 0.0, "liquidateBorrowForPerpPnl_marketOraclePrice": "155000000",
		"liquidateBorrowForPerpPnl_pnlTransfer": "300000000", "liquidateBorrowForPerpPnl_liabilityMarketIndex": 1.0,
		"liquidateBorrowForPerpPnl_liabilityPrice": "155000000", "liquidateBorrowForPerpPnl_liabilityTransfer": "1935483870",
	}},
	{events.LiquidationTypePerpPnlForDeposit, map[string]any{
		"liquidatePerpPnlForDeposit_perpMarketIndex": 2.0, "liquidatePerpPnlForDeposit_marketOraclePrice": "60000000000",
		"liquidatePerpPnlForDeposit_pnlTransfer": "-40000000", "liquidatePerpPnlForDeposit_assetMarketIndex": 0.0,
		"liquidatePerpPnlForDeposit_assetPrice": "1000000", "liquidatePerpPnlForDeposit_assetTransfer": "40000000",
	}},
	{events.LiquidationTypePerpBankruptcy, map[string]any{
		"perpBankruptcy_marketIndex": 0.0, "perpBankruptcy_pnl": "-200000000", "perpBankruptcy_ifPayment": "150000000",
		"perpBankruptcy_clawbackUser": testMaker, "perpBankruptcy_clawbackUserPayment": "50000000",
		"perpBankruptcy_cumulativeFundingRateDelta": "-1200",
	}},
	{events.LiquidationTypeSpotBankruptcy, map[string]any{
		"spotBankruptcy_marketIndex": 1.0, "spotBankruptcy_borrowAmount": "2000000000",
		"spotBankruptcy_ifPayment": "2000000000", "spotBankruptcy_cumulativeDepositInterestDelta": "31",
	}},
}

// liquidationOf is a liquidation of kind with bitFlags set and only its own sub-record's fields.
func liquidationOf(t *testing.T, kind string) *events.Liquidation {
	t.Helper()
	common := fmt.Sprintf(`{"ts":%d,"txSig":%q,"txSigIndex":3,"slot":310000000,"liquidationType":%q,"user":%q,
		"liquidator":%q,"marginRequirement":"1000000000","totalCollateral":"-900000000","marginFreed":"100000000",
		"liquidationId":7,"bankrupt":%t,"canceledOrderIds":["12","13"],"bitFlags":1`,
		testTs, testSig, kind, testUser, testMaker, strings.HasSuffix(kind, "Bankruptcy"))
	for _, lt := range liquidationTypes {
		if lt.kind != kind {
			continue
		}
		own, err := json.Marshal(lt.own)
		if err != nil {
			t.Fatal(err)
		}
		var l events.Liquidation
		if err := json.Unmarshal([]byte(common+","+string(own[1:])), &l); err != nil {
			t.Fatal(err)
		}
		return &l
	}
	t.Fatalf("no liquidation type %s", kind)
	return nil
}

// zeroOf is what a field of another type's sub-record holds: 0 for a market index, null for the
// clawback user, "0" for the rest.
func zeroOf(field string) any {
	switch {
	case strings.HasSuffix(field, "MarketIndex") || strings.HasSuffix(field, "_marketIndex"):
		return 0.0
	case field == "perpBankruptcy_clawbackUser":
		return nil
	}
	return "0"
}

func isSubRecordField(name string) bool { return strings.Contains(name, "_") }

// TestLiquidationsOfEveryTypeCarryEveryField: a liquidation of any type is encoded with the fields of
// all six sub-records (the others' as zeros) and bitFlags, validates against the document's
// Liquidation schema, and decodes back to the same bytes.
func TestLiquidationsOfEveryTypeCarryEveryField(t *testing.T) {
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	schema := doc.Components.Schemas["Liquidation"].Value
	for _, lt := range liquidationTypes {
		t.Run(lt.kind, func(t *testing.T) {
			msg, err := events.Encode(events.TopicLiquidations, liquidationOf(t, lt.kind))
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if got, want := jsonKeys(t, msg.Value), slices.Sorted(slices.Values(liquidationFields)); !slices.Equal(got, want) {
				t.Fatalf("JSON fields\n got  %v\n want %v", got, want)
			}
			var obj map[string]any
			if err := json.Unmarshal(msg.Value, &obj); err != nil {
				t.Fatal(err)
			}
			if err := schema.VisitJSON(obj); err != nil {
				t.Errorf("does not validate against the Liquidation schema: %v\n%s", err, msg.Value)
			}
			if obj["bitFlags"] != 1.0 {
				t.Errorf("bitFlags %v, want 1", obj["bitFlags"])
			}
			for _, name := range liquidationFields {
				if !isSubRecordField(name) {
					continue
				}
				want, own := lt.own[name]
				if !own {
					want = zeroOf(name)
				}
				if obj[name] != want {
					t.Errorf("%s = %#v, want %#v", name, obj[name], want)
				}
			}
			back, err := events.Decode(events.TopicLiquidations, msg.Value)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if again, _ := json.Marshal(back); string(again) != string(msg.Value) {
				t.Errorf("round trip changed the record\n got  %s\n want %s", again, msg.Value)
			}
		})
	}
}

// TestLiquidationCSVOfEveryType: the CSV carries bitFlags and every sub-record's fields, in the JSON's
// order, with the values the JSON carries.
func TestLiquidationCSVOfEveryType(t *testing.T) {
	header := (*events.Liquidation)(nil).CSVHeader()
	if !slices.Equal(header, liquidationFields) {
		t.Fatalf("CSV header\n got  %v\n want %v", header, liquidationFields)
	}
	for _, lt := range liquidationTypes {
		t.Run(lt.kind, func(t *testing.T) {
			l := liquidationOf(t, lt.kind)
			row := l.CSVRow()
			if len(row) != len(header) {
				t.Fatalf("row has %d cells, header %d", len(row), len(header))
			}
			for i, name := range header {
				want := ""
				switch v := lt.own[name]; {
				case name == "bitFlags":
					want = "1"
				case name == "canceledOrderIds":
					want = "12,13"
				case v != nil:
					want = fmt.Sprint(v)
				case !isSubRecordField(name):
					continue
				case zeroOf(name) != nil:
					want = fmt.Sprint(zeroOf(name))
				}
				if row[i] != want {
					t.Errorf("%s cell %q, want %q", name, row[i], want)
				}
			}
			if l.LiquidatePerpMarketIndex != nil && lt.kind != events.LiquidationTypePerp {
				t.Error("CSVRow filled the record's own fields")
			}
		})
	}
}

// TestLiquidationMessagesOfTheEarlierShape: messages that carry only their own sub-record and no
// bitFlags (as producers wrote them before every field was emitted) stay readable and are written
// again in the full shape, bitFlags 0.
func TestLiquidationMessagesOfTheEarlierShape(t *testing.T) {
	old := fmt.Sprintf(`{"ts":%d,"txSig":%q,"txSigIndex":0,"slot":310000000,"liquidationType":"liquidateSpot",
		"user":%q,"liquidator":%q,"marginRequirement":"1","totalCollateral":"0","marginFreed":"1","liquidationId":1,
		"bankrupt":false,"canceledOrderIds":null,"liquidateSpot_assetMarketIndex":1,"liquidateSpot_assetPrice":"2",
		"liquidateSpot_assetTransfer":"3","liquidateSpot_liabilityMarketIndex":0,"liquidateSpot_liabilityPrice":"4",
		"liquidateSpot_liabilityTransfer":"5","liquidateSpot_ifFee":"6"}`, testTs, testSig, testUser, testMaker)
	r, err := events.Decode(events.TopicLiquidations, []byte(old))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jsonKeys(t, b), slices.Sorted(slices.Values(liquidationFields)); !slices.Equal(got, want) {
		t.Fatalf("JSON fields\n got  %v\n want %v", got, want)
	}
	for _, want := range []string{`"bitFlags":0`, `"canceledOrderIds":[]`, `"liquidateSpot_ifFee":"6"`,
		`"liquidatePerp_marketIndex":0`, `"liquidatePerp_fillRecordId":"0"`, `"perpBankruptcy_clawbackUser":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
}

func TestLiquidationBitFlagsAreAU8(t *testing.T) {
	for _, c := range []struct {
		flags int
		ok    bool
	}{{0, true}, {1, true}, {255, true}, {256, false}, {-1, false}} {
		l := liquidationOf(t, events.LiquidationTypePerp)
		l.BitFlags = c.flags
		if err := l.Validate(); (err == nil) != c.ok {
			t.Errorf("bitFlags %d: %v", c.flags, err)
		}
	}
}
