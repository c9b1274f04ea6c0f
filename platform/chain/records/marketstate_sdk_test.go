package records_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
)

// perturbations is how many randomised variants of each real PerpMarket go through both readers.
const perturbations = 60

// TestPerpMarketStateAsSDK is the differential test against the protocol's official TypeScript SDK
// (tools/sdkdiff/amm.js): the real PerpMarket dumps, and randomised perturbations of them (reserves,
// peg, spreads, positions, funding, oracle), give the same market-state quantities field by field,
// the prices from the SDK's own calculateReservePrice and calculatePrice. scripts/deps installs
// node and the SDK; -short skips the test.
func TestPerpMarketStateAsSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the TypeScript SDK under node")
	}
	perps, _ := mustSampleMarkets(t)
	m := records.New(mustSampleCatalogue(t))
	rng := rand.New(rand.NewPCG(33, 1))
	var cases []*events.MarketState
	var input strings.Builder
	real := 0
	for i := range perps {
		for k := range perturbations + 1 {
			a := perps[i] // a copy: the perturbation is this case's alone
			if k > 0 {
				perturb(&a, rng)
			} else {
				real++
			}
			st, err := m.PerpMarketState(&a, stateTs, stateSlot)
			if err != nil {
				t.Fatalf("%s: %v", drift.Name(a.Name), err)
			}
			if err := st.ValidateAt(time.Unix(stateTs, 0)); err != nil {
				t.Errorf("%s: %v", st.Symbol, err)
			}
			b, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, st)
			input.WriteString(base64.StdEncoding.EncodeToString(b) + "\n")
		}
	}
	out := drifttest.SDK(t, filepath.Join("..", "..", ".."), "amm.js", input.String())
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	var n, differ int
	for ; sc.Scan(); n++ {
		var got map[string]any
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("case %d: %v: %s", n, err, sc.Bytes())
		}
		if e, ok := got["error"]; ok {
			t.Fatalf("case %d: the SDK cannot read the account: %v", n, e)
		}
		want := sdkFields(t, cases[n])
		if before := differ; !drifttest.Same(t, fmt.Sprintf("case %d %s", n, cases[n].Symbol), want, got, &differ) && before == 0 {
			t.Logf("case %d: ours %v\nSDK's %v", n, want, got)
		}
	}
	if n != len(cases) {
		t.Fatalf("node answered %d of %d cases", n, len(cases))
	}
	if real != 18 {
		t.Errorf("%d real PerpMarket dumps, want 18", real)
	}
	t.Logf("%d PerpMarket accounts (%d real) read alike by the SDK, %d fields differ", n, real, differ)
}

// sdkFields is a state in amm.js's shape: the record's JSON less what the SDK has no say in.
func sdkFields(tb testing.TB, st *events.MarketState) map[string]any {
	tb.Helper()
	var j map[string]any
	if err := json.Unmarshal([]byte(mustJSON(tb, st)), &j); err != nil {
		tb.Fatal(err)
	}
	for _, k := range []string{"ts", "slot", "marketType"} {
		delete(j, k)
	}
	return j
}

// perturb moves an account's AMM within plausible ranges and now and then to the edges the math
// must survive: empty reserves, 128-bit reserves and positions, widest spreads.
func perturb(a *drift.PerpMarket, rng *rand.Rand) {
	amm := &a.Amm
	reserve := func() borsh.Uint128 {
		switch rng.IntN(20) {
		case 0:
			return borsh.Uint128{}
		case 1:
			return borsh.Uint128{Lo: rng.Uint64(), Hi: rng.Uint64() >> 8}
		}
		// AMM_RESERVE_PRECISION is 1e9: from a thousandth of a token to a billion tokens.
		return borsh.U128(1_000_000 + rng.Uint64N(1_000_000_000_000_000_000))
	}
	amm.BaseAssetReserve, amm.QuoteAssetReserve = reserve(), reserve()
	amm.BidBaseAssetReserve, amm.BidQuoteAssetReserve = reserve(), reserve()
	amm.AskBaseAssetReserve, amm.AskQuoteAssetReserve = reserve(), reserve()
	// PEG_PRECISION is 1e6: pegs from a millionth to a million.
	amm.PegMultiplier = borsh.U128(1 + rng.Uint64N(1_000_000_000_000))
	spread := func() uint32 {
		if rng.IntN(10) == 0 {
			return rng.Uint32()
		}
		return rng.Uint32N(100_000) // up to ten percent
	}
	amm.LongSpread, amm.ShortSpread = spread(), spread()
	base := func(sign int64) borsh.Int128 {
		if rng.IntN(20) == 0 {
			v := borsh.Int128{Lo: rng.Uint64(), Hi: rng.Uint64() >> 2}
			if sign < 0 {
				return v.Neg()
			}
			return v
		}
		return borsh.I128(sign * rng.Int64N(1_000_000_000_000_000_000))
	}
	amm.BaseAssetAmountLong, amm.BaseAssetAmountShort = base(1), base(-1)
	amm.BaseAssetAmountWithAmm = base(int64(1 - 2*rng.IntN(2)))
	amm.LastFundingRateLong = rng.Int64N(2_000_000_000) - 1_000_000_000
	amm.LastFundingRateShort = rng.Int64N(2_000_000_000) - 1_000_000_000
	amm.HistoricalOracleData.LastOraclePrice = 1 + rng.Int64N(1_000_000_000_000)
}

// TestSpotMarketStateAsSDK is the spot side (tools/sdkdiff/spot.js): the real SpotMarket dumps and
// randomised perturbations of them (balances, cumulative interest, decimals, the rate curve, the
// insurance factor) give the SDK's token amounts and rates field by field, and where the SDK
// cannot price the curve (a zero optimal utilization at zero utilization) both refuse.
func TestSpotMarketStateAsSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the TypeScript SDK under node")
	}
	_, spots := mustSampleMarkets(t)
	m := records.New(mustSampleCatalogue(t))
	rng := rand.New(rand.NewPCG(33, 2))
	var cases []*events.MarketState // nil: this package refused the account
	var input strings.Builder
	real := 0
	for i := range spots {
		for k := range perturbations + 1 {
			a := spots[i]
			if k > 0 {
				perturbSpot(&a, rng)
			} else {
				real++
			}
			st, err := m.SpotMarketState(&a, stateTs, stateSlot)
			if err == nil {
				if err := st.ValidateAt(time.Unix(stateTs, 0)); err != nil {
					t.Errorf("%s: %v", st.Symbol, err)
				}
			} else if k == 0 {
				t.Fatalf("%s: %v", drift.Name(a.Name), err)
			}
			b, err := a.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, st)
			input.WriteString(base64.StdEncoding.EncodeToString(b) + "\n")
		}
	}
	out := drifttest.SDK(t, filepath.Join("..", "..", ".."), "spot.js", input.String())
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	var n, differ, refused int
	for ; sc.Scan(); n++ {
		var got map[string]any
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("case %d: %v: %s", n, err, sc.Bytes())
		}
		_, sdkRefused := got["error"]
		if sdkRefused || cases[n] == nil {
			if !sdkRefused || cases[n] != nil {
				t.Errorf("case %d: the SDK gave %s, this package %+v", n, sc.Bytes(), cases[n])
			}
			refused++
			continue
		}
		want := sdkFields(t, cases[n])
		if before := differ; !drifttest.Same(t, fmt.Sprintf("case %d %s", n, cases[n].Symbol), want, got, &differ) && before == 0 {
			t.Logf("case %d: ours %v\nSDK's %v", n, want, got)
		}
	}
	if n != len(cases) {
		t.Fatalf("node answered %d of %d cases", n, len(cases))
	}
	if real != 12 {
		t.Errorf("%d real SpotMarket dumps, want 12", real)
	}
	t.Logf("%d SpotMarket accounts (%d real) read alike by the SDK, %d refused by both, %d fields differ", n, real, refused, differ)
}

// perturbSpot moves a SpotMarket's lending state within plausible ranges and now and then to the
// curve's edges: utilization past full, optimal points above the segment breakpoints, a max rate
// below the optimal one, an insurance factor above one.
func perturbSpot(a *drift.SpotMarket, rng *rand.Rand) {
	balance := func() borsh.Uint128 {
		switch rng.IntN(10) {
		case 0:
			return borsh.Uint128{}
		case 1:
			return borsh.Uint128{Lo: rng.Uint64(), Hi: rng.Uint64N(1 << 20)}
		}
		return borsh.U128(rng.Uint64N(1_000_000_000_000_000_000)) // SPOT_BALANCE_PRECISION 1e9
	}
	a.DepositBalance, a.BorrowBalance = balance(), balance()
	// SPOT_CUMULATIVE_INTEREST_PRECISION is 1e10 and interest only accrues.
	a.CumulativeDepositInterest = borsh.U128(10_000_000_000 + rng.Uint64N(100_000_000_000))
	a.CumulativeBorrowInterest = borsh.U128(10_000_000_000 + rng.Uint64N(100_000_000_000))
	a.Decimals = rng.Uint32N(events.MaxDecimals + 1)
	a.OptimalUtilization = rng.Uint32N(1_000_001)
	if rng.IntN(10) == 0 {
		a.OptimalUtilization = 0
	}
	a.OptimalBorrowRate = rng.Uint32N(2_000_000)
	a.MaxBorrowRate = a.OptimalBorrowRate + rng.Uint32N(10_000_000)
	if rng.IntN(10) == 0 {
		a.MaxBorrowRate = rng.Uint32N(a.OptimalBorrowRate + 1)
	}
	a.MinBorrowRate = uint8(rng.UintN(256))
	a.InsuranceFund.TotalFactor = rng.Uint32N(1_000_001)
	if rng.IntN(20) == 0 {
		a.InsuranceFund.TotalFactor = rng.Uint32()
	}
	a.HistoricalOracleData.LastOraclePrice = 1 + rng.Int64N(1_000_000_000_000)
}
