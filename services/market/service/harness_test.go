package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/api/apitest"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/market/service"
)

var pgServer *pglocal.Server

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pgServer)) }

// now is the tests' fixed clock: a Thursday afternoon, so that weeks and months have history behind.
var now = time.Date(2026, 11, 19, 15, 30, 0, 0, time.UTC)

// stack is one market service on a fresh database and a fresh embedded broker.
type stack struct {
	svc     *service.Service
	pool    *pgxpool.Pool
	brokers []string
	writer  interface {
		Write(ctx context.Context, msgs ...events.Message) error
	}
	v *apitest.Validator
}

// producer writes with a writer of its own per call, so no test leaves one open.
type producer struct{ cfg kafka.Config }

func (p producer) Write(ctx context.Context, msgs ...events.Message) error {
	w := p.cfg.NewWriter("")
	defer w.Close()
	return kafka.Producer{W: w}.Write(ctx, msgs...)
}

func startStack(t *testing.T) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3, Topics: service.Topics()})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	pool := pgtest.NewPool(t, pgServer)
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "market-test"}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	svc, err := service.New(ctx, service.Config{BatchWait: 20 * time.Millisecond}, service.Deps{
		Pool: pool, Kafka: kc, Logger: logger, Registerer: prometheus.NewRegistry(),
		PageKey: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatalf("start market service: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("market service stopped with: %v", err)
		}
		broker.Close()
	})
	return &stack{svc: svc, pool: pool, brokers: broker.Brokers(), writer: producer{kc}, v: apitest.New(t)}
}

// ingest produces msgs and waits until the service has stored every one of them (fills, funding...),
// counted by table rows, so tests never sleep.
func (s *stack) ingest(t *testing.T, msgs ...events.Message) {
	t.Helper()
	want := map[string]int{}
	for _, m := range msgs {
		want[tableOf(m.Topic)]++
	}
	before := map[string]int{}
	for tbl := range want {
		before[tbl] = s.count(t, tbl)
	}
	if err := s.writer.Write(context.Background(), msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
	waitFor(t, 30*time.Second, func() bool {
		for tbl, n := range want {
			if s.count(t, tbl) < before[tbl]+n {
				return false
			}
		}
		return true
	})
}

func tableOf(topic string) string {
	switch topic {
	case events.TopicFills:
		return "fills"
	case events.TopicFundingRates:
		return "funding_rates"
	case events.TopicInsuranceFund:
		return "insurance_fund"
	case events.TopicIFStakes:
		return "if_stakes"
	case events.TopicSwaps:
		return "swaps"
	case events.TopicDeposits:
		return "deposits"
	}
	panic("no table for " + topic)
}

func (s *stack) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM market."+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// get serves path through the service's handler and validates the answer against the OpenAPI document.
func (s *stack) get(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	return s.v.Serve(t, s.svc.Handler(), httptest.NewRequest(http.MethodGet, path, nil))
}

// getJSON GETs path, expects status and decodes the body.
func (s *stack) getJSON(t *testing.T, path string, status int, into any) {
	t.Helper()
	rec := s.get(t, path)
	if rec.Code != status {
		t.Fatalf("GET %s: status %d, want %d; body %s", path, rec.Code, status, rec.Body.String())
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatalf("GET %s: decode: %v", path, err)
		}
	}
}

// ---- event builders: valid records with the amounts a test cares about ----

type mkt struct {
	symbol string
	index  int
	typ    events.MarketType
}

var (
	solPerp = mkt{"SOL-PERP", 0, events.MarketTypePerp}
	btcPerp = mkt{"BTC-PERP", 1, events.MarketTypePerp}
	betMkt  = mkt{"TRUMP-WIN-2028-BET", 3, events.MarketTypePerp}
	usdc    = mkt{"USDC", 0, events.MarketTypeSpot}
	solSpot = mkt{"SOL", 1, events.MarketTypeSpot}
)

func sig(prefix string, n int) string { return fmt.Sprintf("%s%083d", prefix[:5], n) }

func key(i int) string { return fmt.Sprintf("Acct%040d", i) }

// fill is a fill of base (1e9) for quote (1e6) at ts with fill record id id.
func fill(m mkt, ts int64, id int, quote, base, oracle int64) *events.Fill {
	return &events.Fill{
		Ts: ts, TxSig: sig("fills", id), TxSigIndex: id % 3, Slot: 300_000_000 + ts,
		FillerReward: "0", BaseAssetAmountFilled: events.NewAmount(base), QuoteAssetAmountFilled: events.NewAmount(quote),
		TakerFee: events.NewAmount(quote * 35 / 100_000), MakerRebate: events.NewAmount(quote / 100_000), ReferrerReward: "0",
		QuoteAssetAmountSurplus: "0", TakerOrderBaseAssetAmount: events.NewAmount(base),
		TakerOrderCumulativeBaseAssetAmountFilled: events.NewAmount(base), TakerOrderCumulativeQuoteAssetAmountFilled: events.NewAmount(quote),
		MakerOrderBaseAssetAmount: events.NewAmount(base), MakerOrderCumulativeBaseAssetAmountFilled: events.NewAmount(base),
		MakerOrderCumulativeQuoteAssetAmountFilled: events.NewAmount(quote), OraclePrice: events.NewAmount(oracle),
		MakerFee: events.NewAmount(-quote / 100_000), Action: events.ActionFill, ActionExplanation: events.ExplanationOrderFilledWithMatch,
		MarketIndex: m.index, MarketType: m.typ, Filler: key(1), FillRecordID: strconv.Itoa(id),
		Taker: key(2), TakerOrderID: strconv.Itoa(10_000 + id), TakerOrderDirection: events.DirectionLong,
		Maker: key(3), MakerOrderID: strconv.Itoa(20_000 + id), MakerOrderDirection: events.DirectionShort,
		SpotFulfillmentMethodFee: "0", MarketFilter: events.MarketFilter(m.typ, m.symbol), Symbol: m.symbol,
	}
}

func fundingRate(m mkt, ts int64, id int) *events.FundingRate {
	return &events.FundingRate{
		Ts: ts, TxSig: sig("fundr", id), TxSigIndex: 0, Slot: 300_000_000 + ts, MarketIndex: m.index, RecordID: strconv.Itoa(id),
		Symbol: m.symbol, FundingRate: "1250", FundingRateLong: "1250", FundingRateShort: "-1250",
		CumulativeFundingRateLong: events.NewAmount(int64(id) * 1250), CumulativeFundingRateShort: events.NewAmount(-int64(id) * 1250),
		OraclePriceTwap: "150000000", MarkPriceTwap: "150100000", PeriodRevenue: "1000", BaseAssetAmountWithAmm: "5000000000",
		BaseAssetAmountWithUnsettledLp: "0",
	}
}

func insuranceFund(m mkt, ts int64, id int) *events.InsuranceFund {
	return &events.InsuranceFund{
		Ts: ts, TxSig: sig("insfd", id), Slot: 300_000_000 + ts, SpotMarketIndex: m.index, PerpMarketIndex: 0,
		UserIfFactor: 0.5, TotalIfFactor: 1, Symbol: m.symbol, VaultAmountBefore: "1000000", InsuranceVaultAmountBefore: "2000000",
		TotalIfSharesBefore: "100", TotalIfSharesAfter: "100", Amount: "500",
	}
}

func ifStake(m mkt, ts int64, id int, withSymbol bool) *events.IFStake {
	r := &events.IFStake{
		Ts: ts, TxSig: sig("ifstk", id), Slot: 300_000_000 + ts, MarketIndex: m.index, Amount: "1000000",
		UserAuthority: key(9), Action: events.IFStakeActionStake, IfSharesBefore: "0", UserIfSharesBefore: "0",
		TotalIfSharesBefore: "100", IfSharesAfter: "10", UserIfSharesAfter: "10", TotalIfSharesAfter: "110",
		InsuranceVaultAmountBefore: "2000000",
	}
	if withSymbol {
		r.Symbol = m.symbol
	}
	return r
}

func swap(in, out mkt, ts int64, id int) *events.Swap {
	return &events.Swap{
		Ts: ts, TxSig: sig("swaps", id), Slot: 300_000_000 + ts, User: key(4), OutMarketIndex: out.index, InMarketIndex: in.index,
		AmountOut: "1000000000", AmountIn: "150000000", OutOraclePrice: "150000000", InOraclePrice: "1000000", Fee: "1000",
		InSymbol: in.symbol, OutSymbol: out.symbol,
	}
}

func deposit(m mkt, ts int64, id int, reward bool) *events.Deposit {
	expl := events.DepositExplanationNone
	if reward {
		expl = events.DepositExplanationReward
	}
	return &events.Deposit{
		Ts: ts, TxSig: sig("depos", id), Slot: 300_000_000 + ts, Amount: "5000000", OraclePrice: "1000000",
		MarketDepositBalance: "1000000000", MarketWithdrawBalance: "0", MarketCumulativeDepositInterest: "10000000000",
		MarketCumulativeBorrowInterest: "10000000000", TotalDepositsAfter: "5000000", TotalWithdrawsAfter: "0",
		DepositRecordID: strconv.Itoa(id), UserAuthority: key(5), User: key(6), Direction: events.DepositDirectionDeposit,
		Explanation: expl, MarketIndex: m.index, Symbol: m.symbol,
	}
}

func encode(t *testing.T, topic string, recs ...events.Record) []events.Message {
	t.Helper()
	out := make([]events.Message, 0, len(recs))
	for _, r := range recs {
		m, err := events.Encode(topic, r)
		if err != nil {
			t.Fatalf("encode %T: %v", r, err)
		}
		out = append(out, m)
	}
	return out
}

func at(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func mustContain(t *testing.T, body, want string) {
	t.Helper()
	if !strings.Contains(body, want) {
		t.Fatalf("body %q does not contain %q", body, want)
	}
}
