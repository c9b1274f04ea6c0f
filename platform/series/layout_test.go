package series

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// The transcoder is tested from inside the package: it is an implementation detail of the CSV
// answers, and what it must equal (json.Unmarshal, CSVRow, httpapi.CSVWriter) is stated here directly.

func sampleFill() *events.Fill {
	return &events.Fill{
		Tx: events.Tx{Ts: 1763542800, TxSig: "5fLxq9Yv2m3Xk7p1N8cQeR4tWzH6uJbA9sDfGhJkLmNoPqRsTuVwXyZ123456789abcdefghijkmnopqrstuvwxyzAB",
			TxSigIndex: 2, Slot: 301763542800},
		FillerReward: "0", BaseAssetAmountFilled: "1000000000", QuoteAssetAmountFilled: "150000000",
		TakerFee: "52500", MakerRebate: "1500", ReferrerReward: "0", QuoteAssetAmountSurplus: "0",
		TakerOrderBaseAssetAmount: "1000000000", TakerOrderCumulativeBaseAssetAmountFilled: "1000000000",
		TakerOrderCumulativeQuoteAssetAmountFilled: "150000000", MakerOrderBaseAssetAmount: "1000000000",
		MakerOrderCumulativeBaseAssetAmountFilled: "1000000000", MakerOrderCumulativeQuoteAssetAmountFilled: "150000000",
		OraclePrice: "150000000", MakerFee: "-1500", Action: events.ActionFill, ActionExplanation: events.ExplanationOrderFilledWithMatch,
		MarketIndex: 0, MarketType: events.MarketTypePerp, Filler: "FiLLer1111111111111111111111111111111111111",
		FillRecordID: "123456", Taker: "TaKer11111111111111111111111111111111111111", TakerOrderID: "10001",
		TakerOrderDirection: events.DirectionLong, Maker: "MaKer11111111111111111111111111111111111111", MakerOrderID: "20001",
		MakerOrderDirection: events.DirectionShort, SpotFulfillmentMethodFee: "0", TakerExistingQuoteEntryAmount: "7",
		BitFlags: 3, MarketFilter: events.FilterPerp, Symbol: "SOL-PERP",
	}
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// referenceCSV is the reference rendering of one stored record: decode it, write its CSVRow.
func referenceCSV[T any, P interface {
	*T
	events.CSVRecord
}](record []byte) ([]byte, error) {
	rec := P(new(T))
	if err := json.Unmarshal(record, rec); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	w := httpapi.NewCSVWriter(&b)
	if err := w.Write(rec.CSVRow()); err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkSame asserts that the layout renders record exactly as the reference does, or fails exactly
// when it does, and reports whether the fast path took it.
func checkSame[T any, P interface {
	*T
	events.CSVRecord
}](t *testing.T, l *Layout, record []byte) (fast bool) {
	t.Helper()
	want, wantErr := referenceCSV[T, P](record)
	got, err := l.encoder().appendRow([]byte("prefix"), record)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s: error %v, reference error %v", record, err, wantErr)
	}
	if err != nil {
		if string(got) != "prefix" {
			t.Fatalf("%s: failed row left %q behind", record, got)
		}
		return false
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("%s:\n got %s\nwant prefix%s", record, got, want)
	}
	_, fast = l.encoder().appendFast(nil, record)
	return fast
}

// TestLayoutsOfTheRecordTypes checks the layout of each record type a series serves: which take the
// fast path, and that a typical record (with a quote in a text field, which only the reference path
// renders) comes out as the reference renders it.
func TestLayoutsOfTheRecordTypes(t *testing.T) {
	cases := []struct {
		name   string
		layout *Layout
		fast   bool
		check  func(t *testing.T, l *Layout)
	}{
		{"fill", LayoutOf[events.Fill](), true, func(t *testing.T, l *Layout) {
			checkSample[events.Fill](t, l, sampleFill(), func(f *events.Fill) { f.Filler = `a"b` })
			bet := sampleFill()
			bet.Symbol, bet.MarketFilter = "TRUMP-WIN-2028-BET", events.FilterPrediction
			checkSample[events.Fill](t, l, bet, func(f *events.Fill) { f.Symbol = `a"b` })
		}},
		{"funding rate", LayoutOf[events.FundingRate](), true, func(t *testing.T, l *Layout) {
			fr := &events.FundingRate{Tx: events.Tx{Ts: 1, TxSig: "sig", Slot: 9}, MarketIndex: 1, RecordID: "7", Symbol: "SOL-PERP",
				FundingRate: "-1250", CumulativeFundingRateLong: "99"}
			checkSample[events.FundingRate](t, l, fr, func(r *events.FundingRate) { r.Symbol = `a"b` })
		}},
		{"insurance fund", LayoutOf[events.InsuranceFund](), false, func(t *testing.T, l *Layout) {
			// Float columns: the reference path renders them, correctly.
			inf := &events.InsuranceFund{Tx: events.Tx{Ts: 1, TxSig: "s"}, UserIfFactor: 0.5, TotalIfFactor: 1, Symbol: "USDC", Amount: "5"}
			checkSample[events.InsuranceFund](t, l, inf, func(r *events.InsuranceFund) { r.Symbol = `a"b` })
		}},
		{"IF stake", LayoutOf[events.IFStake](), true, func(t *testing.T, l *Layout) {
			st := &events.IFStake{Tx: events.Tx{Ts: 1, TxSig: "s", TxSigIndex: 2, Slot: 3}, MarketIndex: 0, Amount: "-5", UserAuthority: "auth",
				Action: "stake", IfSharesAfter: "10", Symbol: "USDC"}
			checkSample[events.IFStake](t, l, st, func(r *events.IFStake) { r.Action = `a"b` })
		}},
		{"swap", LayoutOf[events.Swap](), true, func(t *testing.T, l *Layout) {
			sw := &events.Swap{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, User: "u", OutMarketIndex: 1, InMarketIndex: 0, AmountOut: "5",
				AmountIn: "-6", Fee: "0", InSymbol: "USDC", OutSymbol: "SOL"}
			checkSample[events.Swap](t, l, sw, func(r *events.Swap) { r.User = `a"b` })
		}},
		{"deposit", LayoutOf[events.Deposit](), true, func(t *testing.T, l *Layout) {
			d := &events.Deposit{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, Amount: "5", DepositRecordID: "9", UserAuthority: "auth", User: "u",
				Direction: "deposit", Explanation: "reward", Symbol: "USDC"}
			checkSample[events.Deposit](t, l, d, func(r *events.Deposit) { r.Explanation = `a"b` })
		}},
		{"funding payment", LayoutOf[events.FundingPayment](), true, func(t *testing.T, l *Layout) {
			fp := &events.FundingPayment{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, UserAuthority: "auth", User: "u", MarketIndex: 1,
				FundingPayment: "-5", BaseAssetAmount: "7", UserLastCumulativeFunding: "1", AmmCumulativeFundingLong: "2",
				AmmCumulativeFundingShort: "-2"}
			checkSample[events.FundingPayment](t, l, fp, func(r *events.FundingPayment) { r.User = `a"b` })
		}},
		{"settle pnl", LayoutOf[events.SettlePnl](), true, func(t *testing.T, l *Layout) {
			sp := &events.SettlePnl{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, User: "u", MarketIndex: 1, Pnl: "-5", BaseAssetAmount: "7",
				QuoteAssetAmountAfter: "1", QuoteEntryAmount: "2", SettlePrice: "3", Explanation: "none"}
			checkSample[events.SettlePnl](t, l, sp, func(r *events.SettlePnl) { r.User = `a"b` })
		}},
		{"perp LP", LayoutOf[events.PerpLP](), true, func(t *testing.T, l *Layout) {
			lp := &events.PerpLP{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, User: "u", Action: "addLiquidity", MarketIndex: 1, NShares: "5",
				DeltaBaseAssetAmount: "-7", DeltaQuoteAssetAmount: "1", Pnl: "0"}
			checkSample[events.PerpLP](t, l, lp, func(r *events.PerpLP) { r.User = `a"b` })
		}},
		{"liquidation", LayoutOf[events.Liquidation](), false, func(t *testing.T, l *Layout) {
			i := 0
			lq := &events.Liquidation{Tx: events.Tx{Ts: 1, TxSig: "s", Slot: 3}, LiquidationType: "liquidatePerp", User: "u", Liquidator: "l",
				MarginRequirement: "1", TotalCollateral: "2", MarginFreed: "3", LiquidationID: 4, CanceledOrderIDs: []string{"5"},
				LiquidatePerpMarketIndex: &i, LiquidatePerpOraclePrice: "6"}
			checkSample[events.Liquidation](t, l, lq, func(r *events.Liquidation) { r.User = `a"b` })
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.layout.fast != c.fast {
				t.Fatalf("fast path %v, want %v", c.layout.fast, c.fast)
			}
			c.check(t, c.layout)
		})
	}
}

// checkSample checks that l renders rec as the reference does, on the fast path when l takes it, and
// rec changed by quote (which must put a quote in a text field) on the reference path.
func checkSample[T any, P interface {
	*T
	events.CSVRecord
}](t *testing.T, l *Layout, rec P, quote func(P)) {
	t.Helper()
	if fast := checkSame[T, P](t, l, mustMarshal(t, rec)); fast != l.fast {
		t.Errorf("sample: fast path %v, want %v", fast, l.fast)
	}
	quote(rec)
	if checkSame[T, P](t, l, mustMarshal(t, rec)) {
		t.Error("a quote in a field took the fast path")
	}
}

func TestCSVRowsEqualTheDatedCSV(t *testing.T) {
	l := LayoutOf[events.Fill]()
	canonical := string(mustMarshal(t, sampleFill()))
	indented, _ := json.MarshalIndent(sampleFill(), "", "  ")
	noOptional := sampleFill()
	noOptional.TakerExistingQuoteEntryAmount, noOptional.BitFlags, noOptional.MarketFilter, noOptional.Symbol = "", 0, "", ""
	replace := func(old, new string) string {
		if !strings.Contains(canonical, old) {
			t.Fatalf("sample has no %s", old)
		}
		return strings.Replace(canonical, old, new, 1)
	}
	cases := []struct {
		name   string
		record string
		fast   bool // whether the fast path must take it
	}{
		{"canonical", canonical, true},
		{"indented", string(indented), true},
		{"optional fields absent", string(mustMarshal(t, noOptional)), true},
		{"empty object", `{}`, true},
		{"keys out of order", `{"symbol":"SOL-PERP","ts":5,"marketIndex":-3}`, true},
		{"duplicate key: last wins", replace(`"ts":1763542800`, `"ts":1,"ts":1763542800`), true},
		{"null leaves a field as it was", replace(`"ts":1763542800`, `"ts":1763542800,"ts":null`), true},
		{"null string", replace(`"symbol":"SOL-PERP"`, `"symbol":null`), true},
		{"non-ASCII text", replace(`"symbol":"SOL-PERP"`, `"symbol":"SOL-€"`), true},
		{"comma in a value", replace(`"symbol":"SOL-PERP"`, `"symbol":"a,b"`), true},
		{"escaped quote", replace(`"symbol":"SOL-PERP"`, `"symbol":"a\"b"`), false},
		{"escaped unicode", replace(`"symbol":"SOL-PERP"`, `"symbol":"\u0053OL"`), false},
		{"escaped key", replace(`"symbol":`, `"\u0073ymbol":`), false},
		{"case-folded key", replace(`"symbol":`, `"SYMBOL":`), false},
		{"unknown key", replace(`"symbol":`, `"extra":1,"symbol":`), false},
		{"negative zero", replace(`"txSigIndex":2`, `"txSigIndex":-0`), false},
		{"exponent", replace(`"txSigIndex":2`, `"txSigIndex":2e0`), false},
		{"fraction", replace(`"txSigIndex":2`, `"txSigIndex":2.5`), false},
		{"19 digits", replace(`"slot":301763542800`, `"slot":1234567890123456789`), false},
		{"overflow", replace(`"slot":301763542800`, `"slot":12345678901234567890`), false},
		{"leading zero", replace(`"slot":301763542800`, `"slot":0301763542800`), false},
		{"number for a string", replace(`"symbol":"SOL-PERP"`, `"symbol":5`), false},
		{"string for a number", replace(`"slot":301763542800`, `"slot":"301763542800"`), false},
		{"bool", replace(`"slot":301763542800`, `"slot":true`), false},
		{"object value", replace(`"slot":301763542800`, `"slot":{}`), false},
		{"invalid UTF-8", replace(`"symbol":"SOL-PERP"`, "\"symbol\":\"SOL\xff\""), false},
		{"control character", replace(`"symbol":"SOL-PERP"`, "\"symbol\":\"SOL\x01\""), false},
		{"trailing data", canonical + `x`, false},
		{"trailing comma", strings.TrimSuffix(canonical, "}") + ",}", false},
		{"truncated", canonical[:len(canonical)-10], false},
		{"top-level null", `null`, false},
		{"array", `[]`, false},
		{"empty input", ``, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if fast := checkSame[events.Fill](t, l, []byte(c.record)); fast != c.fast {
				t.Fatalf("fast path %v, want %v", fast, c.fast)
			}
		})
	}
}

func FuzzCSVRowMatchesReference(f *testing.F) {
	f.Add(mustMarshal(f, sampleFill()))
	f.Add([]byte(`{"ts":-0,"symbol":"a\"b"}`))
	f.Add([]byte(`{"ts":1, "slot" : 2 ,"txSig":null}`))
	l := LayoutOf[events.Fill]()
	f.Fuzz(func(t *testing.T, record []byte) {
		checkSame[events.Fill](t, l, record)
	})
}

// BenchmarkCSVRow compares the layout's rendering of one stored fill with decoding it (as the
// reference path does, and with the ingest's strict decoder) and writing CSVRow through
// httpapi.CSVWriter.
func BenchmarkCSVRow(b *testing.B) {
	record := mustMarshal(b, sampleFill())
	l := LayoutOf[events.Fill]()
	b.Run("layout", func(b *testing.B) {
		enc := l.encoder()
		buf := make([]byte, 0, 4096)
		b.SetBytes(int64(len(record)))
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = enc.appendRow(buf[:0], record); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bm := range []struct {
		name   string
		decode func([]byte) (events.CSVRecord, error)
	}{
		{"json.Unmarshal+CSVRow", func(r []byte) (events.CSVRecord, error) {
			f := new(events.Fill)
			return f, json.Unmarshal(r, f)
		}},
		{"events.Decode+CSVRow", func(r []byte) (events.CSVRecord, error) {
			rec, err := events.Decode(events.TopicFills, r)
			if err != nil {
				return nil, err
			}
			return rec.(*events.Fill), nil
		}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			w := httpapi.NewCSVWriter(discard{})
			b.SetBytes(int64(len(record)))
			b.ReportAllocs()
			for b.Loop() {
				rec, err := bm.decode(record)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Write(rec.CSVRow()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
