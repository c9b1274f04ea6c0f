package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/snapshots"
	"github.com/tidemark/tidemark/services/user"
)

// eventTable is a table of one account's records of one topic: the key, the columns of more, and the
// record as the topic carried it.
func eventTable[T events.Record](schema, name string, more []string, key func(T) (account string, ts int64, sig string, idx int),
	values func(T) []any) ingest.Table[ingest.Event[T]] {
	cols := append([]string{"account", "ts", "tx_sig", "tx_sig_index"}, more...)
	return ingest.Table[ingest.Event[T]]{
		Name:    schema + "." + name,
		Columns: append(cols, "record"),
		Key:     []string{"account", "ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[T]) []any {
			account, ts, sig, idx := key(e.Record)
			row := append([]any{account, ts, sig, int32(idx)}, values(e.Record)...)
			return append(row, e.JSON)
		},
	}
}

func (in *Ingest) writeDeposits(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Deposit]) error {
	t := ingest.Table[ingest.Event[*events.Deposit]]{
		Name:    in.schema + ".deposits",
		Columns: []string{"account", "category", "ts", "tx_sig", "tx_sig_index", "symbol", "record"},
		Key:     []string{"account", "category", "ts", "tx_sig", "tx_sig_index"},
		Row: func(e ingest.Event[*events.Deposit]) []any {
			r := e.Record
			cat := "deposit"
			if r.Explanation == events.DepositExplanationReward {
				cat = "reward"
			}
			return []any{r.User, cat, r.Ts, r.TxSig, int32(r.TxSigIndex), r.Symbol, e.JSON}
		},
	}
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert deposits: %w", err)
	}
	return in.t.markets.Save(ctx, tx, markets.Of(evs, func(e ingest.Event[*events.Deposit]) events.Market {
		return events.Market{Symbol: e.Record.Symbol, Index: e.Record.MarketIndex, Type: events.MarketTypeSpot}
	}))
}

func (in *Ingest) writeSwaps(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Swap]) error {
	t := eventTable(in.schema, "swaps", []string{"in_symbol", "out_symbol"},
		func(r *events.Swap) (string, int64, string, int) { return r.User, r.Ts, r.TxSig, r.TxSigIndex },
		func(r *events.Swap) []any { return []any{r.InSymbol, r.OutSymbol} })
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert swaps: %w", err)
	}
	ms := map[string]events.Market{}
	for _, e := range evs {
		r := e.Record
		ms[r.InSymbol] = events.Market{Symbol: r.InSymbol, Index: r.InMarketIndex, Type: events.MarketTypeSpot}
		ms[r.OutSymbol] = events.Market{Symbol: r.OutSymbol, Index: r.OutMarketIndex, Type: events.MarketTypeSpot}
	}
	return in.t.markets.Save(ctx, tx, ms)
}

func (in *Ingest) writeSettlePnl(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.SettlePnl]) error {
	t := eventTable(in.schema, "settle_pnl", []string{"market_index"},
		func(r *events.SettlePnl) (string, int64, string, int) { return r.User, r.Ts, r.TxSig, r.TxSigIndex },
		func(r *events.SettlePnl) []any { return []any{int32(r.MarketIndex)} })
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert settlements: %w", err)
	}
	return nil
}

func (in *Ingest) writeFundingPayments(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.FundingPayment]) error {
	t := eventTable(in.schema, "funding_payments", []string{"market_index"},
		func(r *events.FundingPayment) (string, int64, string, int) {
			return r.User, r.Ts, r.TxSig, r.TxSigIndex
		},
		func(r *events.FundingPayment) []any { return []any{int32(r.MarketIndex)} })
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert funding payments: %w", err)
	}
	return nil
}

func (in *Ingest) writeLP(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.PerpLP]) error {
	t := eventTable(in.schema, "lp", []string{"market_index"},
		func(r *events.PerpLP) (string, int64, string, int) { return r.User, r.Ts, r.TxSig, r.TxSigIndex },
		func(r *events.PerpLP) []any { return []any{int32(r.MarketIndex)} })
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert LP records: %w", err)
	}
	return nil
}

func (in *Ingest) writeLiquidations(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Liquidation]) error {
	// Stored as the API emits it (every sub-record's fields, bitFlags, [] for no cancelled orders),
	// whatever of it the message left out.
	for i, e := range evs {
		b, err := json.Marshal(e.Record)
		if err != nil {
			return fmt.Errorf("encode liquidation: %w", err)
		}
		evs[i].JSON = b
	}
	t := eventTable(in.schema, "liquidations", []string{"perp_market", "spot_market"},
		func(r *events.Liquidation) (string, int64, string, int) { return r.User, r.Ts, r.TxSig, r.TxSigIndex },
		func(r *events.Liquidation) []any {
			perp, spot := user.LiquidationMarkets(r)
			return []any{index(perp), index(spot)}
		})
	if _, err := t.Insert(ctx, tx, evs); err != nil {
		return fmt.Errorf("insert liquidations: %w", err)
	}
	return nil
}

func index(i *int) any {
	if i == nil {
		return nil
	}
	return int32(*i)
}

// writeOrders keeps each order's newest record (by lastUpdatedTs); a place action stored before it
// gives way.
func (in *Ingest) writeOrders(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Order]) error {
	type key struct{ account, order string }
	newest := map[key]ingest.Event[*events.Order]{}
	ms := map[string]events.Market{}
	for _, e := range evs {
		r := e.Record
		k := key{r.User, r.OrderID}
		if cur, ok := newest[k]; !ok || r.LastUpdatedTs > cur.Record.LastUpdatedTs {
			newest[k] = e
		}
		ms[r.Symbol] = events.Market{Symbol: r.Symbol, Index: r.MarketIndex, Type: r.MarketType}
	}
	// In key order, so that writers updating the same orders cannot deadlock.
	keys := slices.SortedFunc(maps.Keys(newest), func(a, b key) int {
		return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.order, b.order))
	})
	n := len(keys)
	accounts, orders, ts, filters, symbols, updated, records := make([]string, n), make([]string, n), make([]int64, n),
		make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, k := range keys {
		r := newest[k].Record
		accounts[i], orders[i], ts[i], filters[i], symbols[i] = r.User, r.OrderID, r.Ts, r.MarketFilter, r.Symbol
		updated[i], records[i] = r.LastUpdatedTs, string(newest[k].JSON)
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO `+in.t.orders+` AS o (account, order_id, placed_ts, market_filter, symbol, from_record, record_updated, record)
		SELECT a, o, t, f, s, true, u, r::json FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[])
			AS x(a, o, t, f, s, u, r)
		ON CONFLICT (account, order_id) DO UPDATE SET placed_ts = excluded.placed_ts, market_filter = excluded.market_filter,
			symbol = excluded.symbol, from_record = true, record_updated = excluded.record_updated, record = excluded.record
		WHERE NOT o.from_record OR excluded.record_updated > o.record_updated`,
		accounts, orders, ts, filters, symbols, updated, records)
	in.t.markets.Queue(&b, ms)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("save orders: %w", err)
	}
	return nil
}

// writeOrderActions stores the actions other than fills (protocol.fills carries those) by the account
// that acts, and makes an order known by its place action until its record arrives.
func (in *Ingest) writeOrderActions(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.OrderAction]) error {
	type row struct {
		account, order string
		a              *events.OrderAction
		record         []byte // as the API lists the order's actions
		topic          []byte // as the topic carried it: a place action stands for its order
	}
	var rows []row
	ms := map[string]events.Market{}
	for _, e := range evs {
		a := e.Record
		if a.Action == events.ActionFill {
			continue
		}
		account, order, ok := user.ActingSide(a)
		if !ok {
			continue
		}
		rec, err := user.ActionJSON(a)
		if err != nil {
			return err
		}
		rows = append(rows, row{account, order, a, rec, e.JSON})
		if a.Symbol != "" {
			ms[a.Symbol] = events.Market{Symbol: a.Symbol, Index: a.MarketIndex, Type: a.MarketType}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	t := ingest.Table[row]{
		Name:    in.schema + ".order_actions",
		Columns: []string{"account", "order_id", "ts", "tx_sig", "tx_sig_index", "slot", "action", "explanation", "record"},
		Key:     []string{"account", "order_id", "ts", "tx_sig", "tx_sig_index"},
		Row: func(r row) []any {
			return []any{r.account, r.order, r.a.Ts, r.a.TxSig, int32(r.a.TxSigIndex), r.a.Slot, r.a.Action, r.a.ActionExplanation, r.record}
		},
	}
	if _, err := t.Insert(ctx, tx, rows); err != nil {
		return fmt.Errorf("insert order actions: %w", err)
	}
	var b pgx.Batch
	in.t.markets.Queue(&b, ms)
	// Place actions make their orders known; a record, whenever it comes, takes their place.
	var accounts, orders, filters, symbols, records []string
	var ts []int64
	slices.SortFunc(rows, func(x, y row) int {
		return cmp.Or(strings.Compare(x.account, y.account), strings.Compare(x.order, y.order))
	})
	for _, r := range rows {
		if r.a.Action != events.ActionPlace || r.a.Symbol == "" {
			continue
		}
		filter := r.a.MarketFilter
		if filter == "" {
			filter = events.MarketFilter(r.a.MarketType, r.a.Symbol)
		}
		accounts, orders, ts = append(accounts, r.account), append(orders, r.order), append(ts, r.a.Ts)
		filters, symbols, records = append(filters, filter), append(symbols, r.a.Symbol), append(records, string(r.topic))
	}
	if len(accounts) > 0 {
		b.Queue(`INSERT INTO `+in.t.orders+` (account, order_id, placed_ts, market_filter, symbol, from_record, record_updated, record)
			SELECT a, o, t, f, s, false, 0, r::json FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[])
				AS x(a, o, t, f, s, r)
			ON CONFLICT (account, order_id) DO NOTHING`, accounts, orders, ts, filters, symbols, records)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("save orders of place actions: %w", err)
		}
	}
	return nil
}

// snapshotRow is one account's snapshot as the API's series serves it.
type snapshotRow struct {
	account, kind string
	ts            int64
	record        []byte
}

// writeSnapshots keeps the trading, earn and vault snapshots of each account; referral snapshots
// belong to wallets, not accounts, and are the Authority service's.
func (in *Ingest) writeSnapshots(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.AccountSnapshot]) error {
	var rows []snapshotRow
	for _, e := range evs {
		r := e.Record
		if r.Kind == events.SnapshotReferral {
			continue
		}
		b, err := snapshots.Entry(r)
		if err != nil {
			return err
		}
		rows = append(rows, snapshotRow{r.AccountID, r.Kind, r.Ts, b})
	}
	t := ingest.Table[snapshotRow]{
		Name:    in.schema + ".snapshots",
		Columns: []string{"account", "kind", "ts", "record"},
		Key:     []string{"account", "kind", "ts"},
		Row:     func(r snapshotRow) []any { return []any{r.account, r.kind, r.ts, r.record} },
	}
	if _, err := t.Insert(ctx, tx, rows); err != nil {
		return fmt.Errorf("insert snapshots: %w", err)
	}
	return nil
}
