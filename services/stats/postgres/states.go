package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/services/stats"
)

// state is a market state sample as stored.
type state struct {
	*events.MarketState
	oracle int64
	mark   *int64
}

func prepareState(e ingest.Event[*events.MarketState]) (state, error) {
	r := e.Record
	s := state{MarketState: r}
	var err error
	if s.oracle, err = strconv.ParseInt(string(r.OraclePrice), 10, 64); err != nil {
		return state{}, fmt.Errorf("oraclePrice %q is beyond 64 bits", r.OraclePrice)
	}
	if r.MarkPrice != "" {
		m, err := strconv.ParseInt(string(r.MarkPrice), 10, 64)
		if err != nil {
			return state{}, fmt.Errorf("markPrice %q is beyond 64 bits", r.MarkPrice)
		}
		s.mark = &m
	}
	return s, nil
}

// newer reports whether a is a later sample than b (slot, then ts).
func newer(a, b *events.MarketState) bool {
	return a.Slot > b.Slot || a.Slot == b.Slot && a.Ts > b.Ts
}

func optText(a events.Amount) *string {
	if a == "" {
		return nil
	}
	s := string(a)
	return &s
}

func (in *Ingest) writeMarketStates(ctx context.Context, tx pgx.Tx, recs []state) error {
	latest := map[string]state{}
	type hourKey struct {
		symbol string
		hour   int64
	}
	hours := map[hourKey]state{}
	ms := map[string]events.Market{}
	for _, s := range recs {
		if cur, ok := latest[s.Symbol]; !ok || newer(s.MarketState, cur.MarketState) {
			latest[s.Symbol] = s
		}
		ms[s.Symbol] = events.Market{Symbol: s.Symbol, Index: s.MarketIndex, Type: s.MarketType}
		if s.MarketType == events.MarketTypeSpot && (s.DepositRate != "" || s.BorrowRate != "" || s.DepositBalance != "" || s.BorrowBalance != "") {
			k := hourKey{s.Symbol, stats.HourOf(s.Ts)}
			if cur, ok := hours[k]; !ok || newer(s.MarketState, cur.MarketState) {
				hours[k] = s
			}
		}
	}
	var b pgx.Batch
	in.markets.Queue(&b, ms)

	syms := slices.Sorted(maps.Keys(latest))
	n := len(syms)
	idx, typ := make([]int32, n), make([]string, n)
	ts, slot, oracle := make([]int64, n), make([]int64, n), make([]int64, n)
	mark, dec := make([]*int64, n), make([]*int32, n)
	oiLong, oiShort, oi, fLong, fShort := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	for i, sym := range syms {
		s := latest[sym]
		idx[i], typ[i], ts[i], slot[i], oracle[i], mark[i] = int32(s.MarketIndex), string(s.MarketType), s.Ts, s.Slot, s.oracle, s.mark
		oiLong[i], oiShort[i], oi[i] = optText(s.BaseAssetAmountLong), optText(s.BaseAssetAmountShort), optText(s.OpenInterest)
		fLong[i], fShort[i] = optText(s.FundingRateLong), optText(s.FundingRateShort)
		if s.Decimals != nil {
			d := int32(*s.Decimals)
			dec[i] = &d
		}
	}
	b.Queue(`INSERT INTO `+in.t.marketStates+` AS s (symbol, market_index, market_type, ts, slot, oracle_price, mark_price,
			oi_long, oi_short, open_interest, funding_long, funding_short, decimals)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
			$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::int[])
		ON CONFLICT (symbol) DO UPDATE SET
			market_index = excluded.market_index, market_type = excluded.market_type, ts = excluded.ts, slot = excluded.slot,
			oracle_price = excluded.oracle_price, mark_price = excluded.mark_price, oi_long = excluded.oi_long,
			oi_short = excluded.oi_short, open_interest = excluded.open_interest, funding_long = excluded.funding_long,
			funding_short = excluded.funding_short, decimals = coalesce(excluded.decimals, s.decimals)
		WHERE (excluded.slot, excluded.ts) > (s.slot, s.ts)`,
		syms, idx, typ, ts, slot, oracle, mark, oiLong, oiShort, oi, fLong, fShort, dec)

	if len(hours) > 0 {
		keys := slices.SortedFunc(maps.Keys(hours), func(a, b hourKey) int {
			return cmp.Or(strings.Compare(a.symbol, b.symbol), cmp.Compare(a.hour, b.hour))
		})
		n := len(keys)
		sym, hts, hslot := make([]string, n), make([]int64, n), make([]int64, n)
		dr, br, db, bb := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		for i, k := range keys {
			s := hours[k]
			sym[i], hts[i], hslot[i] = k.symbol, k.hour, s.Slot
			dr[i], br[i], db[i], bb[i] = optText(s.DepositRate), optText(s.BorrowRate), optText(s.DepositBalance), optText(s.BorrowBalance)
		}
		b.Queue(`INSERT INTO `+in.t.spotRates+` AS r (symbol, ts, slot, deposit_rate, borrow_rate, deposit_balance, borrow_balance)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[])
			ON CONFLICT (symbol, ts) DO UPDATE SET slot = excluded.slot, deposit_rate = excluded.deposit_rate,
				borrow_rate = excluded.borrow_rate, deposit_balance = excluded.deposit_balance, borrow_balance = excluded.borrow_balance
			WHERE excluded.slot > r.slot`, sym, hts, hslot, dr, br, db, bb)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("store market states: %w", err)
	}
	return nil
}

// funding is a funding rate update as stored.
type funding struct {
	*events.FundingRate
	pct float64
}

func prepareFunding(e ingest.Event[*events.FundingRate]) (funding, error) {
	r := e.Record
	rate, err1 := strconv.ParseFloat(string(r.FundingRate), 64)
	twap, err2 := strconv.ParseFloat(string(r.OraclePriceTwap), 64)
	if err1 != nil || err2 != nil {
		return funding{}, fmt.Errorf("fundingRate %q or oraclePriceTwap %q is no number", r.FundingRate, r.OraclePriceTwap)
	}
	if twap <= 0 {
		return funding{}, fmt.Errorf("oraclePriceTwap %q must be positive to state the rate in percent", r.OraclePriceTwap)
	}
	// rate (1e9 quote per base) over the TWAP (1e6 quote per base), in percent
	return funding{r, rate / twap / 1e3 * 100}, nil
}

func (in *Ingest) writeFundingRates(ctx context.Context, tx pgx.Tx, recs []funding) error {
	t := ingest.Table[funding]{
		Name:    in.schema + ".funding_rates",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "market_index", "rate_long", "rate_short", "rate_pct"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(f funding) []any {
			return []any{f.Ts, f.TxSig, int32(f.TxSigIndex), f.Slot, f.Symbol, int32(f.MarketIndex), string(f.FundingRateLong),
				string(f.FundingRateShort), f.pct}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert funding rates: %w", err)
	}
	return in.markets.Save(ctx, tx, markets.Of(recs, func(f funding) events.Market {
		return events.Market{Symbol: f.Symbol, Index: f.MarketIndex, Type: events.MarketTypePerp}
	}))
}

// liquidation is a liquidation record as stored: what it liquidated, valued as far as the record
// allows (see the liquidations table).
type liquidation struct {
	*events.Liquidation
	json        []byte
	valueMarket *int32
	priced      bool
	amount      string
	ifPayment   *string
}

func abs(a events.Amount) string { return strings.TrimPrefix(string(a), "-") }

// times is the product of two integer strings.
func times(a, b events.Amount) string {
	x, _ := new(big.Int).SetString(abs(a), 10)
	y, _ := new(big.Int).SetString(abs(b), 10)
	return new(big.Int).Mul(x, y).String()
}

func prepareLiquidation(e ingest.Event[*events.Liquidation]) (liquidation, error) {
	r := e.Record
	// Stored as the API emits it (every sub-record's fields, bitFlags, [] for no cancelled orders),
	// whatever of it the message left out.
	b, err := json.Marshal(r)
	if err != nil {
		return liquidation{}, fmt.Errorf("encode liquidation: %w", err)
	}
	l := liquidation{Liquidation: r, json: b}
	spot := func(idx *int) {
		v := int32(*idx)
		l.valueMarket = &v
	}
	switch r.LiquidationType {
	case events.LiquidationTypePerp:
		l.amount = abs(r.LiquidatePerpQuoteAssetAmount)
	case events.LiquidationTypeBorrowForPerpPnl:
		l.amount = abs(r.LiquidateBorrowForPerpPnlPnlTransfer)
	case events.LiquidationTypePerpPnlForDeposit:
		l.amount = abs(r.LiquidatePerpPnlForDepositPnlTransfer)
	case events.LiquidationTypeSpot:
		spot(r.LiquidateSpotLiabilityMarketIndex)
		l.priced, l.amount = true, times(r.LiquidateSpotLiabilityTransfer, r.LiquidateSpotLiabilityPrice)
	case events.LiquidationTypePerpBankruptcy:
		l.amount = abs(r.PerpBankruptcyPnl)
		p := abs(r.PerpBankruptcyIfPayment)
		l.ifPayment = &p
	case events.LiquidationTypeSpotBankruptcy:
		spot(r.SpotBankruptcyMarketIndex)
		l.amount = abs(r.SpotBankruptcyBorrowAmount)
		p := abs(r.SpotBankruptcyIfPayment)
		l.ifPayment = &p
	default:
		return liquidation{}, fmt.Errorf("unknown liquidationType %q", r.LiquidationType)
	}
	return l, nil
}

func bankruptcy(kind string) bool {
	return kind == events.LiquidationTypePerpBankruptcy || kind == events.LiquidationTypeSpotBankruptcy
}

func (in *Ingest) writeLiquidations(ctx context.Context, tx pgx.Tx, recs []liquidation) error {
	t := ingest.Table[liquidation]{
		Name: in.schema + ".liquidations",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "liquidation_type", "bankruptcy", "value_market", "priced",
			"amount", "if_payment", "record"},
		Key: []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(l liquidation) []any {
			return []any{l.Ts, l.TxSig, int32(l.TxSigIndex), l.Slot, l.LiquidationType, bankruptcy(l.LiquidationType),
				l.valueMarket, l.priced, l.amount, l.ifPayment, l.json}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert liquidations: %w", err)
	}
	return nil
}

func (in *Ingest) writeInsuranceFund(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.InsuranceFund]) error {
	t := ingest.Table[ingest.Event[*events.InsuranceFund]]{
		Name: in.schema + ".insurance_fund",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "spot_market_index", "amount", "vault_after",
			"total_shares", "record"},
		Key: []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[*events.InsuranceFund]) []any {
			r := e.Record
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.Symbol, int32(r.SpotMarketIndex), string(r.Amount),
				addAmounts(r.InsuranceVaultAmountBefore, r.Amount), string(r.TotalIfSharesAfter), e.JSON}
		},
	}
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert insurance fund records: %w", err)
	}
	return in.markets.Save(ctx, tx, markets.Of(evs, func(e ingest.Event[*events.InsuranceFund]) events.Market {
		return events.Market{Symbol: e.Record.Symbol, Index: e.Record.SpotMarketIndex, Type: events.MarketTypeSpot}
	}))
}

func addAmounts(a, b events.Amount) string {
	x, _ := new(big.Int).SetString(string(a), 10)
	y, _ := new(big.Int).SetString(string(b), 10)
	return new(big.Int).Add(x, y).String()
}

// stakeVaultAfter is the insurance fund vault after a stake action: a stake or an admin deposit
// brings amount in, an unstake takes it out, requests and transfers between stakers move nothing.
func stakeVaultAfter(r *events.IFStake) string {
	switch r.Action {
	case events.IFStakeActionStake, events.IFStakeActionAdminDeposit:
		return addAmounts(r.InsuranceVaultAmountBefore, r.Amount)
	case events.IFStakeActionUnstake:
		return addAmounts(r.InsuranceVaultAmountBefore, events.Amount("-"+abs(r.Amount)))
	}
	return string(r.InsuranceVaultAmountBefore)
}

func (in *Ingest) writeIFStakes(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.IFStake]) error {
	t := ingest.Table[*events.IFStake]{
		Name:    in.schema + ".if_stakes",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "market_index", "vault_after", "total_shares", "user_shares"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.IFStake) []any {
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, int32(r.MarketIndex), stakeVaultAfter(r),
				string(r.TotalIfSharesAfter), string(r.UserIfSharesAfter)}
		},
	}
	recs := make([]*events.IFStake, len(evs))
	for i, e := range evs {
		recs[i] = e.Record
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert IF stakes: %w", err)
	}
	// Stakes are in spot markets' insurance funds; those that name their market teach it.
	return in.markets.Save(ctx, tx, markets.Of(recs, func(r *events.IFStake) events.Market {
		return events.Market{Symbol: r.Symbol, Index: r.MarketIndex, Type: events.MarketTypeSpot}
	}))
}

// writeDeposits keeps each spot market's balances per hour as its last deposit of the hour reports
// them.
func (in *Ingest) writeDeposits(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Deposit]) error {
	type hourKey struct {
		symbol string
		hour   int64
	}
	later := func(a, b *events.Deposit) bool {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), strings.Compare(a.TxSig, b.TxSig), cmp.Compare(a.TxSigIndex, b.TxSigIndex)) > 0
	}
	hours := map[hourKey]*events.Deposit{}
	ms := map[string]events.Market{}
	for _, e := range evs {
		r := e.Record
		k := hourKey{r.Symbol, stats.HourOf(r.Ts)}
		if cur := hours[k]; cur == nil || later(r, cur) {
			hours[k] = r
		}
		ms[r.Symbol] = events.Market{Symbol: r.Symbol, Index: r.MarketIndex, Type: events.MarketTypeSpot}
	}
	keys := slices.SortedFunc(maps.Keys(hours), func(a, b hourKey) int {
		return cmp.Or(strings.Compare(a.symbol, b.symbol), cmp.Compare(a.hour, b.hour))
	})
	n := len(keys)
	sym, ts, slot, sig, sigIdx, dep, bor := make([]string, n), make([]int64, n), make([]int64, n), make([]string, n),
		make([]int32, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		r := hours[k]
		sym[i], ts[i], slot[i], sig[i], sigIdx[i] = k.symbol, k.hour, r.Slot, r.TxSig, int32(r.TxSigIndex)
		dep[i], bor[i] = string(r.MarketDepositBalance), string(r.MarketWithdrawBalance)
	}
	var b pgx.Batch
	in.markets.Queue(&b, ms)
	b.Queue(`INSERT INTO `+in.t.spotBalances+` AS b (symbol, ts, slot, tx_sig, tx_sig_index, deposit_balance, borrow_balance)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::int[], $6::text[], $7::text[])
		ON CONFLICT (symbol, ts) DO UPDATE SET slot = excluded.slot, tx_sig = excluded.tx_sig, tx_sig_index = excluded.tx_sig_index,
			deposit_balance = excluded.deposit_balance, borrow_balance = excluded.borrow_balance
		WHERE (excluded.slot, excluded.tx_sig, excluded.tx_sig_index) > (b.slot, b.tx_sig, b.tx_sig_index)`,
		sym, ts, slot, sig, sigIdx, dep, bor)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("store spot balances: %w", err)
	}
	return nil
}

func (in *Ingest) writeSwaps(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Swap]) error {
	t := ingest.Table[ingest.Event[*events.Swap]]{
		Name:    in.schema + ".swaps",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[*events.Swap]) []any {
			return []any{e.Record.Ts, e.Record.TxSig, int32(e.Record.TxSigIndex), e.Record.Slot, e.JSON}
		},
	}
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert swaps: %w", err)
	}
	return nil
}

func (in *Ingest) writeVaults(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Vault]) error {
	latest := map[string]ingest.Event[*events.Vault]{}
	for _, e := range evs {
		cur, ok := latest[e.Record.Vault]
		if !ok || e.Record.Slot > cur.Record.Slot || e.Record.Slot == cur.Record.Slot && e.Record.Ts > cur.Record.Ts {
			latest[e.Record.Vault] = e
		}
	}
	keys := slices.Sorted(maps.Keys(latest))
	ts, slot, recs := make([]int64, len(keys)), make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		e := latest[k]
		ts[i], slot[i], recs[i] = e.Record.Ts, e.Record.Slot, string(e.JSON)
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+in.t.vaults+` AS v (vault, ts, slot, record)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::json[])
		ON CONFLICT (vault) DO UPDATE SET ts = excluded.ts, slot = excluded.slot, record = excluded.record
		WHERE (excluded.slot, excluded.ts) > (v.slot, v.ts)`, keys, ts, slot, recs)
	if err != nil {
		return fmt.Errorf("store vaults: %w", err)
	}
	return nil
}

func (in *Ingest) writeParams(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Params]) error {
	newest := evs[0].Record
	for _, e := range evs[1:] {
		if e.Record.Ts >= newest.Ts {
			newest = e.Record
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+in.t.params+` AS p (id, ts, params) VALUES (1, $1, $2::json)
		ON CONFLICT (id) DO UPDATE SET ts = excluded.ts, params = excluded.params WHERE excluded.ts >= p.ts`,
		newest.Ts, string(newest.Params))
	if err != nil {
		return fmt.Errorf("store parameters: %w", err)
	}
	return nil
}
