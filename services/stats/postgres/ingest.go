// Package postgres stores the stats schema: its migrations, the ingest sinks that keep its aggregates,
// the store that reads them and the publisher of the live market summaries.
package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/stats"
)

// Ingest writes the topics the stats service consumes into its schema. Every aggregate moves only
// with the rows its transaction inserted (ingest.Table.Insert's fresh rows): a batch delivered twice
// changes nothing. Latest-state rows (market states, vaults, parameters) are replaced only by a
// sample of a later slot, which a replay cannot be.
//
// Fills and settlements are an account's; the leaderboards are a wallet's, and an account's wallet
// comes from its new-user record, which may arrive after its first fills. So the sinks append what a
// batch did to each account's month as deltas, in the batch's transaction, and a background fold
// (Fold) moves the deltas of accounts with a known wallet into their wallets' rows: no sink waits for
// another's mapping, and none updates a row another updates.
type Ingest struct {
	schema  string
	t       tables
	markets markets.Table
}

// NewIngest writes into schema.
func NewIngest(schema string) *Ingest {
	return &Ingest{schema: schema, t: tablesOf(schema), markets: markets.In(schema)}
}

// tables are the quoted names of the schema's tables.
type tables struct {
	fills, tradeMinutes, tradeHours, marketStates, spotRates, spotBalances, funding, liquidations, insuranceFund,
	ifStakes, swaps, vaults, params, accounts, settlements, walletMonths, pendingVolumes, pendingPnl,
	volumeDeltas, pnlDeltas, boardSizes, edgePublished, markets string
}

func tablesOf(schema string) tables {
	q := func(name string) string { return pg.Table(schema, name) }
	return tables{
		fills: q("fills"), tradeMinutes: q("trade_minutes"), tradeHours: q("trade_hours"), marketStates: q("market_states"),
		spotRates: q("spot_rates"), spotBalances: q("spot_balances"), funding: q("funding_rates"), liquidations: q("liquidations"),
		insuranceFund: q("insurance_fund"), ifStakes: q("if_stakes"), swaps: q("swaps"), vaults: q("vaults"), params: q("params"),
		accounts: q("accounts"), settlements: q("settlements"), walletMonths: q("wallet_months"),
		pendingVolumes: q("pending_volumes"), pendingPnl: q("pending_pnl"), volumeDeltas: q("volume_deltas"), pnlDeltas: q("pnl_deltas"),
		boardSizes: q("board_sizes"), edgePublished: q("edge_published"), markets: q("markets"),
	}
}

// Sinks returns one sink per consumed topic, in the order every transaction writes them.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{
		ingest.Records(events.TopicNewUsers, in.writeNewUsers),
		ingest.Prepared(events.TopicFills, prepareFill, in.WriteFills),
		ingest.Records(events.TopicSettlePnl, in.writeSettlements),
		ingest.Prepared(events.TopicMarketStates, prepareState, in.writeMarketStates),
		ingest.Prepared(events.TopicFundingRates, prepareFunding, in.writeFundingRates),
		ingest.Prepared(events.TopicLiquidations, prepareLiquidation, in.writeLiquidations),
		ingest.Records(events.TopicInsuranceFund, in.writeInsuranceFund),
		ingest.Records(events.TopicIFStakes, in.writeIFStakes),
		ingest.Records(events.TopicDeposits, in.writeDeposits),
		ingest.Records(events.TopicSwaps, in.writeSwaps),
		ingest.Records(events.TopicVaults, in.writeVaults),
		ingest.Records(events.TopicParams, in.writeParams),
	}
}

// FillsTopicIndex is the index of the fills sink among Sinks.
const FillsTopicIndex = 1

// prepareFill reads a fill's figures as it is decoded, beside the writers: a fill the stats cannot
// take (no symbol, no base) goes to the DLQ with the reason.
func prepareFill(e ingest.Event[*events.Fill]) (stats.Fill, error) { return stats.FillOf(e.Record) }

// FillsTable is how fills are stored: the ingest writes through it, and benchmarks COPY the same rows
// into the same table for their baseline.
func FillsTable(schema string) ingest.Table[stats.Fill] {
	return ingest.Table[stats.Fill]{
		Name: schema + ".fills",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "fill_record_id", "taker", "maker", "quote", "base",
			"price", "oracle_price"},
		Key: []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(f stats.Fill) []any {
			return []any{f.Ts, f.TxSig, int32(f.TxSigIndex), f.Slot, f.Market.Symbol, f.ID, f.Taker, f.Maker, f.Quote, f.Base,
				f.Price, f.OraclePrice}
		},
	}
}

// fillAggregates is what a batch of fills does to the aggregates.
type fillAggregates struct {
	minutes, hours []stats.Bucket
	accounts       []stats.AccountVolume
	markets        map[string]events.Market
}

func aggregateFills(fills []stats.Fill) fillAggregates {
	ms := markets.Of(fills, func(f stats.Fill) events.Market { return f.Market })
	minutes := stats.Buckets(fills, stats.Minute)
	return fillAggregates{minutes: minutes, hours: stats.Rollup(minutes, stats.Hour), accounts: stats.AccountVolumes(fills), markets: ms}
}

// WriteFills stores fills and moves the trading aggregates by the ones this transaction inserted, and
// appends their accounts' volume deltas.
func (in *Ingest) WriteFills(ctx context.Context, tx pgx.Tx, fills []stats.Fill) error {
	// The aggregation needs no database, so it runs while Postgres copies the fills, on the bet that
	// every fill is new (only a replayed batch holds known ones).
	pre := make(chan fillAggregates, 1)
	go func() { pre <- aggregateFills(fills) }()
	fresh, err := FillsTable(in.schema).Insert(ctx, tx, fills)
	agg := <-pre
	if err != nil {
		return fmt.Errorf("insert fills: %w", err)
	}
	if len(fresh) == 0 {
		return nil
	}
	if len(fresh) != len(fills) {
		agg = aggregateFills(fresh)
	}
	// One round trip for all: between statements the consumer's busy goroutines can keep this one
	// waiting for the scheduler while the server idles.
	var b pgx.Batch
	in.markets.Queue(&b, agg.markets)
	queueBuckets(&b, in.t.tradeMinutes, agg.minutes)
	queueBuckets(&b, in.t.tradeHours, agg.hours)
	queueVolumeDeltas(&b, in.t.volumeDeltas, agg.accounts)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("move the trading aggregates: %w", err)
	}
	return nil
}

func queueBuckets(b *pgx.Batch, table string, buckets []stats.Bucket) {
	n := len(buckets)
	if n == 0 {
		return
	}
	sym := make([]string, n)
	ts, fills, fh, fl, oh, ol := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	lts, lid, lslot, closes, closeOracle := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	quote, base := make([]string, n), make([]string, n)
	for i, k := range buckets {
		sym[i], ts[i], fills[i], quote[i], base[i] = k.Symbol, k.Ts, k.Fills, k.Quote.String(), k.Base.String()
		fh[i], fl[i], oh[i], ol[i] = k.FillHigh, k.FillLow, k.OracleHigh, k.OracleLow
		lts[i], lid[i], lslot[i], closes[i], closeOracle[i] = k.LastTs, k.LastID, k.LastSlot, k.Close, k.CloseOracle
	}
	later := "(excluded.last_ts, excluded.last_id) > (b.last_ts, b.last_id)"
	b.Queue(`INSERT INTO `+table+` AS b (symbol, ts, fills, quote, base, fill_high, fill_low, oracle_high, oracle_low,
			last_ts, last_id, last_slot, close, close_oracle)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::int[], $4::numeric[], $5::numeric[], $6::bigint[], $7::bigint[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[])
		ON CONFLICT (symbol, ts) DO UPDATE SET
			fills = b.fills + excluded.fills,
			quote = b.quote + excluded.quote,
			base = b.base + excluded.base,
			fill_high = greatest(b.fill_high, excluded.fill_high),
			fill_low = least(b.fill_low, excluded.fill_low),
			oracle_high = greatest(b.oracle_high, excluded.oracle_high),
			oracle_low = least(b.oracle_low, excluded.oracle_low),
			last_ts = CASE WHEN `+later+` THEN excluded.last_ts ELSE b.last_ts END,
			last_id = CASE WHEN `+later+` THEN excluded.last_id ELSE b.last_id END,
			last_slot = CASE WHEN `+later+` THEN excluded.last_slot ELSE b.last_slot END,
			close = CASE WHEN `+later+` THEN excluded.close ELSE b.close END,
			close_oracle = CASE WHEN `+later+` THEN excluded.close_oracle ELSE b.close_oracle END`,
		sym, ts, fills, quote, base, fh, fl, oh, ol, lts, lid, lslot, closes, closeOracle)
}

// queueVolumeDeltas appends vols, what a batch's fresh fills did to their accounts' months.
func queueVolumeDeltas(b *pgx.Batch, table string, vols []stats.AccountVolume) {
	if len(vols) == 0 {
		return
	}
	months, accounts, maker, taker := make([]int64, len(vols)), make([]string, len(vols)), make([]string, len(vols)), make([]string, len(vols))
	for i, v := range vols {
		months[i], accounts[i], maker[i], taker[i] = v.Month, v.Account, v.Maker.String(), v.Taker.String()
	}
	b.Queue(`INSERT INTO `+table+` (month, account, maker_volume, taker_volume)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[], $4::numeric[])`, months, accounts, maker, taker)
}

// writeNewUsers records which wallet owns each account; the first record of an account counts.
func (in *Ingest) writeNewUsers(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.NewUser]) error {
	t := ingest.Table[*events.NewUser]{
		Name:    in.schema + ".accounts",
		Columns: []string{"account", "authority"},
		Key:     []string{"account"},
		Row:     func(u *events.NewUser) []any { return []any{u.User, u.UserAuthority} },
	}
	users := make([]*events.NewUser, len(evs))
	for i, e := range evs {
		users[i] = e.Record
	}
	if _, err := t.Insert(ctx, tx, users); err != nil {
		return fmt.Errorf("insert accounts: %w", err)
	}
	return nil
}

// settlement is a settlement of P&L as stored.
type settlement struct {
	*events.SettlePnl
	pnl stats.Sum
}

func (in *Ingest) writeSettlements(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.SettlePnl]) error {
	recs := make([]settlement, len(evs))
	for i, e := range evs {
		p, _ := stats.ParseSum(string(e.Record.Pnl)) // a validated amount
		recs[i] = settlement{e.Record, p}
	}
	t := ingest.Table[settlement]{
		Name:    in.schema + ".settlements",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "account", "pnl"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(s settlement) []any {
			return []any{s.Ts, s.TxSig, int32(s.TxSigIndex), s.User, string(s.Pnl)}
		},
	}
	fresh, err := t.Insert(ctx, tx, recs)
	if err != nil {
		return fmt.Errorf("insert settlements: %w", err)
	}
	if len(fresh) == 0 {
		return nil
	}
	// An account's month of P&L.
	type key struct {
		month   int64
		account string
	}
	sums := map[key]*stats.Sum{}
	for _, st := range fresh {
		k := key{stats.MonthOf(st.Ts), st.User}
		if sums[k] == nil {
			sums[k] = &stats.Sum{}
		}
		sums[k].Add(st.pnl)
	}
	months, accounts, pnl := make([]int64, 0, len(sums)), make([]string, 0, len(sums)), make([]string, 0, len(sums))
	for k, v := range sums {
		months, accounts, pnl = append(months, k.month), append(accounts, k.account), append(pnl, v.String())
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+in.t.pnlDeltas+` (month, account, pnl)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[])`, months, accounts, pnl); err != nil {
		return fmt.Errorf("append P&L deltas: %w", err)
	}
	return nil
}
