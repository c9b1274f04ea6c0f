package sim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

var windowStart = time.Date(2025, 5, 10, 0, 0, 0, 0, time.UTC)

func generate(tb testing.TB, s *sim.Simulator, from, to time.Time) []events.Message {
	tb.Helper()
	var out []events.Message
	if err := s.Generate(from, to, func(m events.Message) error {
		out = append(out, m)
		return nil
	}); err != nil {
		tb.Fatalf("Generate: %v", err)
	}
	return out
}

func decode(tb testing.TB, m events.Message) events.Record {
	tb.Helper()
	r, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		tb.Fatalf("Decode %s %s: %v", m.Topic, m.Value, err)
	}
	return r
}

// eventTs is the event time of any record.
func eventTs(tb testing.TB, r events.Record) int64 {
	tb.Helper()
	switch r := r.(type) {
	case *events.Fill:
		return r.Ts
	case *events.Order:
		return r.Ts
	case *events.FundingRate:
		return r.Ts
	case *events.FundingPayment:
		return r.Ts
	case *events.Liquidation:
		return r.Ts
	case *events.Deposit:
		return r.Ts
	case *events.Swap:
		return r.Ts
	case *events.SettlePnl:
		return r.Ts
	case *events.PerpLP:
		return r.Ts
	case *events.InsuranceFund:
		return r.Ts
	case *events.IFStake:
		return r.Ts
	case *events.LPMintRedeem:
		return r.Ts
	case *events.NewUser:
		return r.Ts
	case *events.MarketState:
		return r.Ts
	case *events.AccountSnapshot:
		return r.Ts
	case *events.Vault:
		return r.Ts
	case *events.Params:
		return r.Ts
	}
	tb.Fatalf("no ts for %T", r)
	return 0
}

// asFill returns r if it is a trade (order actions share the Fill type).
func asFill(r events.Record) (*events.Fill, bool) {
	f, ok := r.(*events.Fill)
	return f, ok && f.Action == events.ActionFill
}

// fillsOf is the fills of records, in their order.
func fillsOf(records []events.Record) []*events.Fill {
	var out []*events.Fill
	for _, r := range records {
		if f, ok := asFill(r); ok {
			out = append(out, f)
		}
	}
	return out
}

func sameMessages(a, b []events.Message) bool {
	return slices.EqualFunc(a, b, func(x, y events.Message) bool {
		if x.Topic != y.Topic || !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for k, v := range x.Headers {
			if y.Headers[k] != v {
				return false
			}
		}
		return true
	})
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := sim.Config{Seed: 42, Authorities: 50}
	from, to := windowStart, windowStart.Add(90*time.Minute)
	a := generate(t, sim.New(cfg), from, to)
	b := generate(t, sim.New(cfg), from, to)
	if len(a) == 0 || !sameMessages(a, b) {
		t.Fatalf("same seed and window gave different streams (%d vs %d messages)", len(a), len(b))
	}
	cfg.Seed = 43
	c := generate(t, sim.New(cfg), from, to)
	if sameMessages(a, c) {
		t.Error("different seeds gave the same stream")
	}
}

func TestGenerateDoesNotDependOnHowTheWindowIsSplit(t *testing.T) {
	cfg := sim.Config{Seed: 5, Authorities: 30}
	from, mid, to := windowStart, windowStart.Add(37*time.Minute+13*time.Second), windowStart.Add(75*time.Minute)
	whole := generate(t, sim.New(cfg), from, to)
	s := sim.New(cfg)
	split := append(generate(t, s, from, mid), generate(t, s, mid, to)...)
	if !sameMessages(whole, split) {
		t.Fatalf("split windows differ from the whole window (%d vs %d messages)", len(whole), len(split))
	}
}

func TestGenerateRejectsWindowsBeforeTheEpoch(t *testing.T) {
	err := sim.New(sim.Config{}).Generate(sim.Epoch().Add(-time.Hour), sim.Epoch(), func(events.Message) error { return nil })
	if err == nil {
		t.Error("no error for a window before the epoch")
	}
}

func TestGenerateStopsOnEmitError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := sim.New(sim.Config{}).Generate(windowStart, windowStart.Add(time.Hour), func(events.Message) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("Generate = %v after %d messages, want the emit error after 10", err, n)
	}
}

func TestMessagesDecodeInTimeOrderWithNewUsersFirst(t *testing.T) {
	s := sim.New(sim.Config{Seed: 9, Authorities: 40})
	from, to := windowStart, windowStart.Add(2*time.Hour)
	msgs := generate(t, s, from, to)
	accounts := s.Accounts()
	known := map[string]bool{}
	topics := map[string]int{}
	last := int64(0)
	for i, m := range msgs {
		r := decode(t, m)
		topics[m.Topic]++
		if got := m.Headers[events.HeaderEventType]; got != r.EventType() {
			t.Fatalf("message %d: event-type %q for a %s", i, got, r.EventType())
		}
		if m.Headers[events.HeaderSchemaVersion] != "1" {
			t.Fatalf("message %d: schema-version %q", i, m.Headers[events.HeaderSchemaVersion])
		}
		ts := eventTs(t, r)
		if ts < last || ts < from.Unix() || ts >= to.Unix() {
			t.Fatalf("message %d at %d: out of order or outside the window (previous %d)", i, ts, last)
		}
		last = ts
		if i < len(accounts) {
			nu, ok := r.(*events.NewUser)
			if !ok {
				t.Fatalf("message %d is a %s, want the NewUser records first", i, r.EventType())
			}
			known[nu.User] = true
			continue
		}
		if f, ok := asFill(r); ok {
			for _, u := range []string{f.Taker, f.Maker} {
				if u != "" && !known[u] && !slices.ContainsFunc(accounts, func(a sim.Account) bool { return a.User == u }) {
					t.Fatalf("fill by unknown account %s", u)
				}
			}
			if !known[f.Taker] {
				t.Fatalf("fill by %s before its NewUser", f.Taker)
			}
		}
	}
	if len(known) != len(accounts) {
		t.Errorf("%d NewUser records for %d accounts", len(known), len(accounts))
	}
	for _, name := range events.ProtocolTopics() {
		if topics[name] == 0 && name != events.TopicLiquidations {
			t.Errorf("no %s messages in two hours", name)
		}
	}
}

// month is a 30-day run with few fills and sparse background, shared by the invariant tests.
type month struct {
	msgs    []events.Message
	records []events.Record
	from    time.Time
	to      time.Time
}

func generateMonth(t *testing.T) month {
	t.Helper()
	cfg := sim.Config{Seed: 11, Authorities: 20, FillsPerMinute: 0.5, MarketStateInterval: time.Hour, SnapshotInterval: 24 * time.Hour}
	from := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(30 * 24 * time.Hour)
	mo := month{msgs: generate(t, sim.New(cfg), from, to), from: from, to: to}
	for _, m := range mo.msgs {
		mo.records = append(mo.records, decode(t, m))
	}
	return mo
}

func TestThirtyDayInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("30 simulated days")
	}
	mo := generateMonth(t)
	levels := map[string]float64{"SOL-PERP": 150, "BTC-PERP": 60000, "ETH-PERP": 3000, "SOL": 150, "USDC": 1}

	t.Run("prices stay positive and in band", func(t *testing.T) {
		seen := map[string]int{}
		check := func(symbol string, price events.Amount) {
			p, err := price.Int64()
			if err != nil || p <= 0 {
				t.Fatalf("%s price %q", symbol, price)
			}
			seen[symbol]++
			dollars := float64(p) / events.PricePrecision
			if strings.HasSuffix(symbol, "-BET") {
				if dollars <= 0 || dollars >= 1 {
					t.Fatalf("%s price %v outside (0, 1)", symbol, dollars)
				}
				return
			}
			if lvl := levels[symbol]; dollars < lvl/3 || dollars > lvl*3 {
				t.Fatalf("%s price %v outside [%v, %v]", symbol, dollars, lvl/3, lvl*3)
			}
		}
		for _, r := range mo.records {
			switch r := r.(type) {
			case *events.Fill:
				check(r.Symbol, r.OraclePrice)
			case *events.MarketState:
				check(r.Symbol, r.OraclePrice)
				// A spot market's token amounts are worth something only with its decimals.
				if want := map[string]int{"USDC": 6, "SOL": 9}; r.MarketType == events.MarketTypeSpot &&
					(r.Decimals == nil || *r.Decimals != want[r.Symbol]) {
					t.Fatalf("%s state: decimals %v, want %d", r.Symbol, r.Decimals, want[r.Symbol])
				}
			}
		}
		for _, m := range sim.Markets() {
			if seen[m.Symbol] == 0 {
				t.Errorf("no prices for %s", m.Symbol)
			}
		}
	})

	t.Run("quote equals base times price", func(t *testing.T) {
		for _, f := range fillsOf(mo.records) {
			base, _ := f.BaseAssetAmountFilled.Int64()
			quote, _ := f.QuoteAssetAmountFilled.Int64()
			oracle, _ := f.OraclePrice.Int64()
			if base <= 0 || quote <= 0 {
				t.Fatalf("fill %s: base %d quote %d", f.FillRecordID, base, quote)
			}
			// quote/base*1e3 is the fill price in dollars; it sits within 1% of the oracle.
			price := float64(quote) / float64(base) * 1e3
			if oraclePx := float64(oracle) / events.PricePrecision; math.Abs(price/oraclePx-1) > 0.01 {
				t.Fatalf("fill %s %s: price %v vs oracle %v", f.FillRecordID, f.Symbol, price, oraclePx)
			}
			fee, _ := f.TakerFee.Int64()
			if want := quote * 35 / 100000; fee != want {
				t.Fatalf("fill %s: taker fee %d, want 3.5 bps = %d", f.FillRecordID, fee, want)
			}
		}
	})

	t.Run("fill ids are contiguous per market and signatures are unique", func(t *testing.T) {
		// Numbered in the chain's order (TestFillIDsStayContiguousWhenLiveChangesTheRate checks
		// that order): here, each market's ids are one run without holes or repeats.
		ids := map[string][]int64{}
		sigs := map[string]bool{}
		for _, f := range fillsOf(mo.records) {
			id, err := strconv.ParseInt(f.FillRecordID, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			key := string(f.MarketType) + "/" + strconv.Itoa(f.MarketIndex)
			ids[key] = append(ids[key], id)
			if len(f.TxSig) != 88 || sigs[f.TxSig] {
				t.Fatalf("txSig %q: length %d or repeated", f.TxSig, len(f.TxSig))
			}
			sigs[f.TxSig] = true
		}
		for key, run := range ids {
			slices.Sort(run)
			for i := 1; i < len(run); i++ {
				if run[i] != run[i-1]+1 {
					t.Fatalf("%s: fill id %d after %d", key, run[i], run[i-1])
				}
			}
		}
		if len(ids) != 5 {
			t.Errorf("fills in %d markets, want 5 traded markets", len(ids))
		}
	})

	t.Run("liquidations carry every field of every sub-record and bitFlags", func(t *testing.T) {
		fields := (*events.Liquidation)(nil).CSVHeader() // the API record's fields
		slices.Sort(fields)
		types, flagged := map[string]int{}, 0
		for _, m := range mo.msgs {
			if m.Topic != events.TopicLiquidations {
				continue
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(m.Value, &obj); err != nil {
				t.Fatal(err)
			}
			if keys := slices.Sorted(maps.Keys(obj)); !slices.Equal(keys, fields) {
				t.Fatalf("liquidation message with the fields %v, want %v", keys, fields)
			}
			var kind string
			_ = json.Unmarshal(obj["liquidationType"], &kind)
			types[kind]++
			if string(obj["bitFlags"]) == "1" {
				flagged++
			}
		}
		if len(types) == 0 || flagged == 0 {
			t.Errorf("liquidations by type %v, %d with bitFlags set: want some flagged", types, flagged)
		}
	})

	t.Run("hourly funding for every perp", func(t *testing.T) {
		type key struct {
			market int
			hour   int64
		}
		rates := map[key]*events.FundingRate{}
		for _, r := range mo.records {
			if fr, ok := r.(*events.FundingRate); ok {
				k := key{fr.MarketIndex, fr.Ts / 3600}
				if rates[k] != nil {
					t.Fatalf("two funding updates for market %d in hour %d", k.market, k.hour)
				}
				rates[k] = fr
			}
		}
		for _, m := range sim.Markets() {
			if m.Type != events.MarketTypePerp {
				continue
			}
			var prev *events.FundingRate
			for h := mo.from.Unix() / 3600; h < mo.to.Unix()/3600; h++ {
				fr := rates[key{m.Index, h}]
				if fr == nil {
					t.Fatalf("%s: no funding in hour %d", m.Symbol, h)
				}
				if fr.Symbol != m.Symbol {
					t.Fatalf("funding for %d named %s", m.Index, fr.Symbol)
				}
				if prev != nil {
					cum, _ := fr.CumulativeFundingRateLong.Int64()
					before, _ := prev.CumulativeFundingRateLong.Int64()
					rate, _ := fr.FundingRateLong.Int64()
					if cum != before+rate {
						t.Fatalf("%s hour %d: cumulative %d != %d + %d", m.Symbol, h, cum, before, rate)
					}
				}
				prev = fr
			}
		}
	})

	t.Run("slots advance about 2.5 a second", func(t *testing.T) {
		var firstTs, firstSlot, lastTs, lastSlot int64
		maxSlot := map[int64]int64{}
		minSlot := map[int64]int64{}
		for _, f := range fillsOf(mo.records) {
			if firstTs == 0 {
				firstTs, firstSlot = f.Ts, f.Slot
			}
			lastTs, lastSlot = f.Ts, f.Slot
			if v, ok := minSlot[f.Ts]; !ok || f.Slot < v {
				minSlot[f.Ts] = f.Slot
			}
			maxSlot[f.Ts] = max(maxSlot[f.Ts], f.Slot)
		}
		rate := float64(lastSlot-firstSlot) / float64(lastTs-firstTs)
		if math.Abs(rate-2.5) > 0.01 {
			t.Errorf("%.3f slots a second", rate)
		}
		secs := make([]int64, 0, len(maxSlot))
		for s := range maxSlot {
			secs = append(secs, s)
		}
		slices.Sort(secs)
		for i := 1; i < len(secs); i++ {
			if maxSlot[secs[i-1]] >= minSlot[secs[i]] {
				t.Fatalf("slot at %d (%d) not below slot at %d (%d)", secs[i-1], maxSlot[secs[i-1]], secs[i], minSlot[secs[i]])
			}
		}
	})

	t.Run("funding payments follow the cumulative rates", func(t *testing.T) {
		n := 0
		for _, r := range mo.records {
			p, ok := r.(*events.FundingPayment)
			if !ok {
				continue
			}
			n++
			base, _ := p.BaseAssetAmount.Int64()
			last, _ := p.UserLastCumulativeFunding.Int64()
			cum, _ := p.AmmCumulativeFundingLong.Int64()
			if base < 0 {
				cum, _ = p.AmmCumulativeFundingShort.Int64()
			}
			pay, _ := p.FundingPayment.Int64()
			if want := math.Round(-float64(base) * float64(cum-last) / 1e12); math.Abs(float64(pay)-want) > 1 {
				t.Fatalf("payment %d, want %v", pay, want)
			}
		}
		if n == 0 {
			t.Error("no funding payments")
		}
	})
}

// Some wallets are builders, some others hold an escrow approving builders (a few none yet), and
// the first subaccount's NewUser record of each carries them.
func TestNewUsersCarryBuilderAccounts(t *testing.T) {
	s := sim.New(sim.Config{Seed: 3, Authorities: 200})
	msgs := generate(t, s, windowStart, windowStart.Add(time.Second))
	builders := map[string]*events.BuilderAccount{}
	escrows := map[string]*events.RevenueShareEscrow{}
	for _, m := range msgs {
		nu, ok := decode(t, m).(*events.NewUser)
		if !ok {
			continue
		}
		carries := nu.BuilderRevenueShareAccount != nil || nu.RevenueShareEscrow != nil
		if carries && nu.SubAccountID != 0 {
			t.Fatalf("subaccount %d of %s carries builder accounts", nu.SubAccountID, nu.UserAuthority)
		}
		if nu.BuilderRevenueShareAccount != nil {
			builders[nu.UserAuthority] = nu.BuilderRevenueShareAccount
		}
		if nu.RevenueShareEscrow != nil {
			escrows[nu.UserAuthority] = nu.RevenueShareEscrow
		}
		b, e := s.BuilderAccounts(nu.UserAuthority, nu.Ts)
		if nu.SubAccountID == 0 && (!reflect.DeepEqual(b, nu.BuilderRevenueShareAccount) || !reflect.DeepEqual(e, nu.RevenueShareEscrow)) {
			t.Fatalf("%s: the record carries %+v %+v, BuilderAccounts says %+v %+v", nu.UserAuthority,
				nu.BuilderRevenueShareAccount, nu.RevenueShareEscrow, b, e)
		}
	}
	if len(builders) < 2 || len(escrows) < 10 {
		t.Fatalf("%d builders and %d escrows among 200 wallets", len(builders), len(escrows))
	}
	empty, approvals := 0, 0
	for auth, e := range escrows {
		if builders[auth] != nil {
			t.Errorf("builder %s also has an escrow", auth)
		}
		if len(e.ApprovedBuilders) == 0 {
			empty++
		}
		for _, a := range e.ApprovedBuilders {
			approvals++
			if builders[a.Authority] == nil || a.MaxFeeTenthBps <= 0 {
				t.Errorf("%s approves %+v, which is no builder", auth, a)
			}
		}
	}
	if approvals == 0 || empty == len(escrows) {
		t.Errorf("escrows approve nobody: %d approvals, %d empty", approvals, empty)
	}
	for _, b := range builders {
		if r, err := b.TotalBuilderRewards.Int64(); err != nil || r <= 0 {
			t.Errorf("builder rewards %q", b.TotalBuilderRewards)
		}
	}
}

// TestMarketStatesEverySlot: below a second, every market's state comes at every slot (2.5 a second),
// each in the second its slot falls in, and the AMM's position moves within the hour.
func TestMarketStatesEverySlot(t *testing.T) {
	cfg := sim.Config{Seed: 3, Authorities: 20, FillsPerMinute: 0.5, MarketStateInterval: time.Millisecond}
	from := windowStart.Add(30 * time.Minute)
	bySymbol := map[string][]*events.MarketState{}
	for _, m := range generate(t, sim.New(cfg), from, from.Add(2*time.Minute)) {
		if ms, ok := decode(t, m).(*events.MarketState); ok {
			bySymbol[ms.Symbol] = append(bySymbol[ms.Symbol], ms)
		}
	}
	if len(bySymbol) != len(sim.Markets()) {
		t.Fatalf("states of %d markets, want %d", len(bySymbol), len(sim.Markets()))
	}
	for sym, states := range bySymbol {
		if len(states) != 300 {
			t.Errorf("%s: %d states in two minutes, want 300", sym, len(states))
		}
		positions := map[events.Amount]bool{}
		for i, ms := range states {
			if ms.Ts < from.Unix() || ms.Ts >= from.Unix()+120 {
				t.Fatalf("%s: state at %d outside the window", sym, ms.Ts)
			}
			if i > 0 && (ms.Slot != states[i-1].Slot+1 || ms.Ts < states[i-1].Ts || ms.Ts > states[i-1].Ts+1) {
				t.Fatalf("%s: state %d at slot %d ts %d after slot %d ts %d", sym, i, ms.Slot, ms.Ts, states[i-1].Slot, states[i-1].Ts)
			}
			positions[ms.BaseAssetAmountWithAmm] = true
		}
		if states[0].MarketType == events.MarketTypePerp && len(positions) < 2 {
			t.Errorf("%s: the AMM's position did not move in two minutes", sym)
		}
	}
}
