package service_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/amm/service"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

func start(t *testing.T, cfg service.Config) *kittest.Stack {
	t.Helper()
	return kittest.Up(t, kittest.Options{}, service.Service(cfg))
}

var (
	now     = kittest.DefaultNow
	solPerp = kittest.SOLPerp
	btcPerp = kittest.BTCPerp
	solSpot = kittest.SOLSpot
)

// hour is the start of the hour two hours before now: a rollup chunk's start.
var hour = now.Unix()/3600*3600 - 2*3600

// slotAt is the chain slot of unix time ts and i-th of its slots: 2.5 a second, as on chain.
func slotAt(ts int64, i int) int64 { return 300_000_000 + (ts-1_700_000_000)*5/2 + int64(i) }

// mstate is a market state of m at ts and slot, its values derived from oracle (whole quote units)
// and position (whole base units).
func mstate(m kittest.Market, ts, slot int64, oracle, position int64) *events.MarketState {
	r := &events.MarketState{Ts: ts, Slot: slot, MarketIndex: m.Index, MarketType: m.Type, Symbol: m.Symbol,
		OraclePrice: events.NewAmount(oracle * events.PricePrecision)}
	if m.Type == events.MarketTypeSpot {
		return r
	}
	p := oracle * events.PricePrecision
	r.MarkPrice = events.NewAmount(p + 1000)
	r.BidPrice = events.NewAmount(p - 37_500)
	r.AskPrice = events.NewAmount(p + 37_501)
	r.LongSpread, r.ShortSpread = events.NewAmount(250), events.NewAmount(1_000_001)
	r.BaseAssetAmountWithAmm = events.NewAmount(position*events.BasePrecision + 1)
	r.BaseAssetAmountLong = events.NewAmount(5000 * events.BasePrecision)
	r.BaseAssetAmountShort = events.NewAmount(-4000 * events.BasePrecision)
	r.OpenInterest = events.NewAmount(9000*events.BasePrecision + 123)
	r.FundingRateLong, r.FundingRateShort = events.NewAmount(1000), events.NewAmount(-1000)
	return r
}

func encode(t *testing.T, recs ...*events.MarketState) []events.Message {
	t.Helper()
	rs := make([]events.Record, len(recs))
	for i, r := range recs {
		rs[i] = r
	}
	return kittest.Encode(t, events.TopicMarketStates, rs...)
}

// series is an AMM answer.
type series struct {
	Success bool    `json:"success"`
	Data    [][]any `json:"data"`
}

func seriesPath(name, market string, start, end int64, samples int) string {
	q := url.Values{"marketName": {market}, "start": {fmt.Sprint(start)}, "end": {fmt.Sprint(end)}}
	if samples > 0 {
		q.Set("samples", fmt.Sprint(samples))
	}
	return "/amm/" + name + "?" + q.Encode()
}

func get(t *testing.T, s *kittest.Stack, path string) series {
	t.Helper()
	rec := s.Get(t, path)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	var out series
	d := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	d.UseNumber()
	if err := d.Decode(&out); err != nil || !out.Success {
		t.Fatalf("GET %s: %v %s", path, err, rec.Body)
	}
	return out
}

// rows renders an answer's rows as strings, "ts value...", to compare by hand.
func rows(a series) []string {
	out := make([]string, len(a.Data))
	for i, r := range a.Data {
		out[i] = row(r)
	}
	return out
}

// row renders one row as "ts value...".
func row(r []any) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " ")
}
