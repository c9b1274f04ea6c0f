// Package postgres stores the stats schema: its migrations, the ingest sinks that keep its aggregates,
// the store that reads them and the publisher of the live market summaries.
package postgres

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/services/stats"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations are the schema's migrations, applied by the kit at start-up.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		panic(err) // the embed pattern above guarantees the folder
	}
	return sub
}

// Ingest writes the topics the stats service consumes into its schema. Every aggregate moves only
// with the rows its transaction inserted (ingest.Table.Insert's fresh rows): a batch delivered twice
// changes nothing. Latest-state rows (market states, vaults, parameters) are replaced only by a
// sample of a later slot, which a replay cannot be.
//
// Fills and settlements are an account's; the leaderboards are a wallet's. An account's wallet comes
// from its new-user record, which may arrive after its first fills: until it does, the account's
// volume and P&L wait in pending rows, which the new-user record folds into its wallet's. So that no
// fill can slip between the fold and the mapping, fills and settlements hold the schema's attribution
// lock shared from before they read the mapping until they commit, and new-user records hold it
// exclusively: new-users is the first sink of every transaction, so the exclusive lock is always its
// transaction's first.
type Ingest struct {
	schema  string
	t       tables
	markets markets.Table
	lockKey string
}

// NewIngest writes into schema.
func NewIngest(schema string) *Ingest {
	return &Ingest{schema: schema, t: tablesOf(schema), markets: markets.In(schema), lockKey: schema + ".attribution"}
}

// tables are the quoted names of the schema's tables.
type tables struct {
	fills, tradeMinutes, tradeHours, marketStates, spotRates, spotBalances, funding, liquidations, insuranceFund,
	ifStakes, swaps, vaults, params, accounts, settlements, walletVolumes, walletPnl, pendingVolumes, pendingPnl,
	edgePublished, markets string
}

func tablesOf(schema string) tables {
	q := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	return tables{
		fills: q("fills"), tradeMinutes: q("trade_minutes"), tradeHours: q("trade_hours"), marketStates: q("market_states"),
		spotRates: q("spot_rates"), spotBalances: q("spot_balances"), funding: q("funding_rates"), liquidations: q("liquidations"),
		insuranceFund: q("insurance_fund"), ifStakes: q("if_stakes"), swaps: q("swaps"), vaults: q("vaults"), params: q("params"),
		accounts: q("accounts"), settlements: q("settlements"), walletVolumes: q("wallet_volumes"), walletPnl: q("wallet_pnl"),
		pendingVolumes: q("pending_volumes"), pendingPnl: q("pending_pnl"), edgePublished: q("edge_published"), markets: q("markets"),
	}
}

// Sinks returns one sink per consumed topic. Their order is the order every transaction writes them
// in: new-users first (see Ingest), then fills and settlements, which take the attribution lock
// before any other sink takes a row.
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

// FillsTopicIndex is the index of the fills sink among Sinks, which places its partitions on the
// consumer's writers (ingest.WriterOf).
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
	ms := map[string]events.Market{}
	for i := range fills {
		if _, ok := ms[fills[i].Market.Symbol]; !ok {
			ms[fills[i].Market.Symbol] = fills[i].Market
		}
	}
	return fillAggregates{
		minutes: stats.Buckets(fills, stats.Minute), hours: stats.Buckets(fills, stats.Hour),
		accounts: stats.AccountVolumes(fills), markets: ms,
	}
}

// WriteFills stores fills and moves the trading aggregates and the wallets' volumes by the ones this
// transaction inserted.
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
	wallets, err := in.attribute(ctx, tx, agg.accounts)
	if err != nil {
		return err
	}
	var b pgx.Batch
	in.markets.Queue(&b, agg.markets)
	queueBuckets(&b, in.t.tradeMinutes, agg.minutes)
	queueBuckets(&b, in.t.tradeHours, agg.hours)
	in.queueVolumes(&b, agg.accounts, wallets)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("move the trading aggregates: %w", err)
	}
	return nil
}

// attribute takes the attribution lock shared and returns the wallet of each account of vols that
// has one.
func (in *Ingest) attribute(ctx context.Context, tx pgx.Tx, vols []stats.AccountVolume) (map[string]string, error) {
	accounts := make([]string, 0, len(vols))
	seen := make(map[string]bool, len(vols))
	for _, v := range vols {
		if !seen[v.Account] {
			seen[v.Account] = true
			accounts = append(accounts, v.Account)
		}
	}
	wallets := make(map[string]string, len(accounts))
	var b pgx.Batch
	b.Queue(`SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))`, in.lockKey)
	b.Queue(`SELECT account, authority FROM `+in.t.accounts+` WHERE account = ANY($1)`, accounts).Query(func(rows pgx.Rows) error {
		var account, authority string
		_, err := pgx.ForEachRow(rows, []any{&account, &authority}, func() error {
			wallets[account] = authority
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("read the accounts' wallets: %w", err)
	}
	return wallets, nil
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

// queueVolumes adds each account's month to its wallet's, or to its pending row while its wallet is
// unknown, both in key order.
func (in *Ingest) queueVolumes(b *pgx.Batch, vols []stats.AccountVolume, wallets map[string]string) {
	type key struct {
		month     int64
		authority string
	}
	byWallet := map[key]*stats.AccountVolume{}
	var pending []stats.AccountVolume
	for _, v := range vols {
		w, ok := wallets[v.Account]
		if !ok {
			pending = append(pending, v)
			continue
		}
		k := key{v.Month, w}
		acc := byWallet[k]
		if acc == nil {
			acc = &stats.AccountVolume{Month: v.Month, Account: w}
			byWallet[k] = acc
		}
		acc.Maker.Add(v.Maker)
		acc.Taker.Add(v.Taker)
	}
	merged := make([]stats.AccountVolume, 0, len(byWallet))
	for _, v := range byWallet {
		merged = append(merged, *v)
	}
	sortVolumes(merged)
	upsertVolumes(b, in.t.walletVolumes, "authority", merged)
	upsertVolumes(b, in.t.pendingVolumes, "account", pending) // vols is in key order already
}

func upsertVolumes(b *pgx.Batch, table, keyCol string, vols []stats.AccountVolume) {
	if len(vols) == 0 {
		return
	}
	months, keys, maker, taker := make([]int64, len(vols)), make([]string, len(vols)), make([]string, len(vols)), make([]string, len(vols))
	for i, v := range vols {
		months[i], keys[i], maker[i], taker[i] = v.Month, v.Account, v.Maker.String(), v.Taker.String()
	}
	b.Queue(`INSERT INTO `+table+` AS w (month, `+keyCol+`, maker_volume, taker_volume)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[], $4::numeric[])
		ON CONFLICT (month, `+keyCol+`) DO UPDATE SET
			maker_volume = w.maker_volume + excluded.maker_volume,
			taker_volume = w.taker_volume + excluded.taker_volume`, months, keys, maker, taker)
}

func (in *Ingest) writeNewUsers(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.NewUser]) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, in.lockKey); err != nil {
		return fmt.Errorf("take the attribution lock: %w", err)
	}
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
	fresh, err := t.Insert(ctx, tx, users)
	if err != nil {
		return fmt.Errorf("insert accounts: %w", err)
	}
	if len(fresh) == 0 {
		return nil
	}
	accounts, authorities := make([]string, len(fresh)), make([]string, len(fresh))
	for i, u := range fresh {
		accounts[i], authorities[i] = u.User, u.UserAuthority
	}
	// What the new accounts did before their wallets were known moves to the wallets, in key order.
	var b pgx.Batch
	b.Queue(`WITH moved AS (
			DELETE FROM `+in.t.pendingVolumes+` p USING unnest($1::text[], $2::text[]) AS n(account, authority)
			WHERE p.account = n.account RETURNING p.month, n.authority, p.maker_volume, p.taker_volume)
		INSERT INTO `+in.t.walletVolumes+` AS w (month, authority, maker_volume, taker_volume)
		SELECT month, authority, sum(maker_volume), sum(taker_volume) FROM moved GROUP BY month, authority ORDER BY month, authority
		ON CONFLICT (month, authority) DO UPDATE SET
			maker_volume = w.maker_volume + excluded.maker_volume,
			taker_volume = w.taker_volume + excluded.taker_volume`, accounts, authorities)
	b.Queue(`WITH moved AS (
			DELETE FROM `+in.t.pendingPnl+` p USING unnest($1::text[], $2::text[]) AS n(account, authority)
			WHERE p.account = n.account RETURNING p.month, n.authority, p.pnl)
		INSERT INTO `+in.t.walletPnl+` AS w (month, authority, pnl)
		SELECT month, authority, sum(pnl) FROM moved GROUP BY month, authority ORDER BY month, authority
		ON CONFLICT (month, authority) DO UPDATE SET pnl = w.pnl + excluded.pnl`, accounts, authorities)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("fold pending aggregates into their wallets: %w", err)
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
	// An account's month of P&L, carried in AccountVolume's Maker.
	type key struct {
		month   int64
		account string
	}
	byKey := map[key]*stats.AccountVolume{}
	for _, s := range fresh {
		k := key{stats.MonthOf(s.Ts), s.User}
		v := byKey[k]
		if v == nil {
			v = &stats.AccountVolume{Month: k.month, Account: k.account}
			byKey[k] = v
		}
		v.Maker.Add(s.pnl)
	}
	vols := make([]stats.AccountVolume, 0, len(byKey))
	for _, v := range byKey {
		vols = append(vols, *v)
	}
	sortVolumes(vols)
	wallets, err := in.attribute(ctx, tx, vols)
	if err != nil {
		return err
	}
	byWallet := map[key]*stats.AccountVolume{}
	var pending []stats.AccountVolume
	for _, v := range vols {
		w, ok := wallets[v.Account]
		if !ok {
			pending = append(pending, v)
			continue
		}
		k := key{v.Month, w}
		acc := byWallet[k]
		if acc == nil {
			acc = &stats.AccountVolume{Month: v.Month, Account: w}
			byWallet[k] = acc
		}
		acc.Maker.Add(v.Maker)
	}
	merged := make([]stats.AccountVolume, 0, len(byWallet))
	for _, v := range byWallet {
		merged = append(merged, *v)
	}
	sortVolumes(merged)
	var b pgx.Batch
	upsertPnl(&b, in.t.walletPnl, "authority", merged)
	upsertPnl(&b, in.t.pendingPnl, "account", pending)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("move the wallets' P&L: %w", err)
	}
	return nil
}

func upsertPnl(b *pgx.Batch, table, keyCol string, vols []stats.AccountVolume) {
	if len(vols) == 0 {
		return
	}
	months, keys, pnl := make([]int64, len(vols)), make([]string, len(vols)), make([]string, len(vols))
	for i, v := range vols {
		months[i], keys[i], pnl[i] = v.Month, v.Account, v.Maker.String()
	}
	b.Queue(`INSERT INTO `+table+` AS w (month, `+keyCol+`, pnl)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[])
		ON CONFLICT (month, `+keyCol+`) DO UPDATE SET pnl = w.pnl + excluded.pnl`, months, keys, pnl)
}

// sortVolumes puts vols in (month, key) order, the order their rows are locked in.
func sortVolumes(vols []stats.AccountVolume) {
	slices.SortFunc(vols, func(a, b stats.AccountVolume) int {
		return cmp.Or(cmp.Compare(a.Month, b.Month), strings.Compare(a.Account, b.Account))
	})
}
