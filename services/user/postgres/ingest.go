package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/services/user"
)

// Ingest writes the topics the user service consumes into its schema.
type Ingest struct {
	schema string
	t      tables
}

// NewIngest writes into schema.
func NewIngest(schema string) *Ingest {
	return &Ingest{schema: schema, t: tablesOf(schema)}
}

// Sinks returns one sink per consumed topic.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{
		ingest.Records(events.TopicFills, in.writeFills),
		ingest.Records(events.TopicOrderActions, in.writeOrderActions),
		ingest.Records(events.TopicOrders, in.writeOrders),
		ingest.Records(events.TopicDeposits, in.writeDeposits),
		ingest.Records(events.TopicSwaps, in.writeSwaps),
		ingest.Records(events.TopicSettlePnl, in.writeSettlePnl),
		ingest.Records(events.TopicFundingPayments, in.writeFundingPayments),
		ingest.Records(events.TopicLP, in.writeLP),
		ingest.Records(events.TopicLiquidations, in.writeLiquidations),
		ingest.Records(events.TopicAccountSnapshots, in.writeSnapshots),
	}
}

// tables are the schema's quoted table names.
type tables struct {
	markets, positionState, orders string
}

func tablesOf(schema string) tables {
	q := func(t string) string { return pgx.Identifier{schema, t}.Sanitize() }
	return tables{markets: q("markets"), positionState: q("position_state"), orders: q("orders")}
}

// FillRow is one account's row of a fill: the fill as the API serves it to that account (user set),
// and, when the fill reduced the account's perp position, its closed-position record.
type FillRow struct {
	Fill     *events.Fill
	Side     user.Side
	Record   []byte
	Position []byte // nil when the fill closed nothing
}

// Pos is the row's place in its account's history.
func (r *FillRow) Pos() user.Pos {
	return user.Pos{Ts: r.Fill.Ts, Slot: r.Fill.Slot, TxSig: r.Fill.TxSig, Index: r.Fill.TxSigIndex}
}

// FillsTable is how fills are stored: the ingest writes through it, and benchmarks COPY the same rows
// into the same table for their baseline.
func FillsTable(schema string) ingest.Table[*FillRow] {
	return ingest.Table[*FillRow]{
		Name:    schema + ".fills",
		Columns: []string{"account", "ts", "tx_sig", "tx_sig_index", "slot", "symbol", "prediction", "order_id", "record", "position"},
		Key:     []string{"account", "ts", "tx_sig", "tx_sig_index"},
		Row: func(r *FillRow) []any {
			f := r.Fill
			var position any
			if r.Position != nil {
				position = r.Position
			}
			prediction := f.MarketFilter == events.FilterPrediction || events.MarketFilter(f.MarketType, f.Symbol) == events.FilterPrediction
			return []any{r.Side.Account, f.Ts, f.TxSig, int32(f.TxSigIndex), f.Slot, f.Symbol, prediction, r.Side.OrderID, r.Record, position}
		},
	}
}

// withUser is record (compact JSON of a fill) with user set to account: the topic's fills name no
// user, so the field is added before the closing brace; a record that names one is encoded again.
func withUser(f *events.Fill, record []byte, account string) ([]byte, error) {
	if f.User == "" && len(record) > 2 && record[len(record)-1] == '}' {
		out := make([]byte, 0, len(record)+len(account)+10)
		out = append(out, record[:len(record)-1]...)
		out = append(out, `,"user":"`...)
		out = append(out, account...)
		return append(out, `"}`...), nil
	}
	c := *f
	c.User = account
	b, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode fill: %w", err)
	}
	return b, nil
}

// positionRecord is the closed-position record of a fill row: the fill with the account's fee, the base
// it closed and the position before it.
func positionRecord(record []byte, fee events.Amount, c *user.Closed) []byte {
	var b bytes.Buffer
	b.Grow(len(record) + 200)
	b.Write(record[:len(record)-1])
	for _, kv := range [][2]string{
		{"userFee", string(fee)}, {"baseClosedForPnl", c.BaseClosed.String()},
		{"userExistingBaseAssetAmount", c.ExistingBase.String()}, {"userExistingQuoteEntryAmount", c.ExistingQuoteEntry.String()},
	} {
		b.WriteString(`,"`)
		b.WriteString(kv[0])
		b.WriteString(`":"`)
		b.WriteString(kv[1])
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// writeFills stores each fill once per account it belongs to and derives the closed positions of the
// accounts' perp fills, in order.
//
// Every fill row applied to a position is in the table and every row in the table was applied (both
// happen in one transaction), so a fill newer than its position's last fill is new, and the position
// record is computed before the row is written: no row is written twice. A fill that turns out new
// and older than that last fill (one that arrived late) has the positions of its account and market
// derived again from the stored fills.
func (in *Ingest) writeFills(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Fill]) error {
	var rows []*FillRow
	seen := map[user.Pos]map[string]bool{}
	markets := map[string]events.Market{}
	for _, e := range evs {
		f := e.Record
		if _, ok := markets[f.Symbol]; !ok && f.Symbol != "" {
			markets[f.Symbol] = events.Market{Symbol: f.Symbol, Index: f.MarketIndex, Type: f.MarketType}
		}
		for _, side := range user.Sides(f) {
			r := &FillRow{Fill: f, Side: side}
			p := r.Pos()
			if seen[p] == nil {
				seen[p] = map[string]bool{}
			}
			if seen[p][side.Account] { // the same fill twice in one batch
				continue
			}
			seen[p][side.Account] = true
			rec, err := withUser(f, e.JSON, side.Account)
			if err != nil {
				return err
			}
			r.Record = rec
			rows = append(rows, r)
		}
	}
	positions, err := in.positions(ctx, tx, rows)
	if err != nil {
		return err
	}
	fresh, err := FillsTable(in.schema).Insert(ctx, tx, rows)
	if err != nil {
		return fmt.Errorf("insert fills: %w", err)
	}
	var late []positionKey
	for _, r := range fresh {
		if k := positionKeyOf(r); positions.isLate(k, r) && !slices.Contains(late, k) {
			late = append(late, k)
		}
	}
	var b pgx.Batch
	queueMarkets(&b, in.t.markets, markets)
	positions.queueSave(&b, in.t.positionState)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("save markets and positions: %w", err)
		}
	}
	for _, k := range late {
		if err := in.rederive(ctx, tx, k); err != nil {
			return err
		}
	}
	return nil
}

// positionKey is one account's position in one market.
type positionKey struct{ account, symbol string }

func positionKeyOf(r *FillRow) positionKey { return positionKey{r.Side.Account, r.Fill.Symbol} }

// positionBook is the positions a batch of fills moves: their state before the batch and after it.
type positionBook struct {
	before map[positionKey]user.Pos // the last fill applied before the batch; absent: none
	after  map[positionKey]*positionState
}

type positionState struct {
	pos  user.Position
	last user.Pos
}

// positions applies rows to their accounts' perp positions in order, setting the closed-position
// record of the rows that closed something. Rows no newer than their position's last fill are left
// alone: replays, or late fills (isLate tells once the insert has said which are new).
func (in *Ingest) positions(ctx context.Context, tx pgx.Tx, rows []*FillRow) (*positionBook, error) {
	book := &positionBook{before: map[positionKey]user.Pos{}, after: map[positionKey]*positionState{}}
	var perp []*FillRow
	keys := map[positionKey]bool{}
	for _, r := range rows {
		if r.Fill.MarketType == events.MarketTypePerp {
			perp = append(perp, r)
			keys[positionKeyOf(r)] = true
		}
	}
	if len(perp) == 0 {
		return book, nil
	}
	// Locked in key order: two writers never hold one account's market at once (its fills are one
	// partition's), but a rebalance can overlap them.
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b positionKey) int {
		return cmpKeys(a, b)
	})
	accounts, symbols := make([]string, len(sorted)), make([]string, len(sorted))
	for i, k := range sorted {
		accounts[i], symbols[i] = k.account, k.symbol
	}
	rs, err := tx.Query(ctx, `SELECT s.account, s.symbol, s.base::text, s.quote_entry::text, s.last_ts, s.last_slot, s.last_tx_sig, s.last_index
		FROM `+in.t.positionState+` s JOIN unnest($1::text[], $2::text[]) AS k(account, symbol) USING (account, symbol)
		ORDER BY s.account, s.symbol FOR UPDATE OF s`, accounts, symbols)
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	var k positionKey
	var base, quote string
	var last user.Pos
	_, err = pgx.ForEachRow(rs, []any{&k.account, &k.symbol, &base, &quote, &last.Ts, &last.Slot, &last.TxSig, &last.Index}, func() error {
		b, ok1 := new(big.Int).SetString(base, 10)
		q, ok2 := new(big.Int).SetString(quote, 10)
		if !ok1 || !ok2 {
			return fmt.Errorf("position of %v: %s, %s", k, base, quote)
		}
		book.before[k] = last
		book.after[k] = &positionState{pos: user.Position{Base: b, QuoteEntry: q}, last: last}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	slices.SortStableFunc(perp, func(a, b *FillRow) int { return a.Pos().Compare(b.Pos()) })
	for _, r := range perp {
		k := positionKeyOf(r)
		st := book.after[k]
		if st == nil {
			st = &positionState{pos: user.NewPosition()}
			book.after[k] = st
		} else if r.Pos().Compare(st.last) <= 0 {
			continue
		}
		closed, err := apply(&st.pos, r)
		if err != nil {
			return nil, err
		}
		if closed != nil {
			r.Position = positionRecord(r.Record, r.Side.Fee, closed)
		}
		st.last = r.Pos()
	}
	return book, nil
}

// apply moves pos by the fill of r.
func apply(pos *user.Position, r *FillRow) (*user.Closed, error) {
	base, err := r.Fill.BaseAssetAmountFilled.Big()
	if err != nil {
		return nil, err
	}
	quote, err := r.Fill.QuoteAssetAmountFilled.Big()
	if err != nil {
		return nil, err
	}
	if base.Sign() == 0 {
		return nil, nil
	}
	closed, err := pos.Apply(r.Side.Direction, base, quote)
	if err != nil {
		return nil, fmt.Errorf("fill %s/%d of %s: %w", r.Fill.TxSig, r.Fill.TxSigIndex, r.Side.Account, err)
	}
	return closed, nil
}

// isLate reports whether the new row r is older than its position's last fill before the batch.
func (b *positionBook) isLate(k positionKey, r *FillRow) bool {
	if r.Fill.MarketType != events.MarketTypePerp {
		return false
	}
	last, ok := b.before[k]
	return ok && r.Pos().Compare(last) <= 0
}

func (b *positionBook) queueSave(batch *pgx.Batch, table string) {
	if len(b.after) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(b.after), cmpKeys)
	n := len(keys)
	accounts, symbols, bases, quotes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ts, slots, sigs, idx := make([]int64, n), make([]int64, n), make([]string, n), make([]int32, n)
	for i, k := range keys {
		st := b.after[k]
		accounts[i], symbols[i], bases[i], quotes[i] = k.account, k.symbol, st.pos.Base.String(), st.pos.QuoteEntry.String()
		ts[i], slots[i], sigs[i], idx[i] = st.last.Ts, st.last.Slot, st.last.TxSig, int32(st.last.Index)
	}
	batch.Queue(`INSERT INTO `+table+` AS s (account, symbol, base, quote_entry, last_ts, last_slot, last_tx_sig, last_index)
		SELECT * FROM unnest($1::text[], $2::text[], $3::numeric[], $4::numeric[], $5::bigint[], $6::bigint[], $7::text[], $8::int[])
		ON CONFLICT (account, symbol) DO UPDATE SET base = excluded.base, quote_entry = excluded.quote_entry,
			last_ts = excluded.last_ts, last_slot = excluded.last_slot, last_tx_sig = excluded.last_tx_sig, last_index = excluded.last_index`,
		accounts, symbols, bases, quotes, ts, slots, sigs, idx)
}

func cmpKeys(a, b positionKey) int {
	if c := compareStrings(a.account, b.account); c != 0 {
		return c
	}
	return compareStrings(a.symbol, b.symbol)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rederive derives every position record of k again from its stored fills, in order, after a late
// fill: the records after it changed. Rare; it reads the account's whole history in the market.
func (in *Ingest) rederive(ctx context.Context, tx pgx.Tx, k positionKey) error {
	fills := pgx.Identifier{in.schema, "fills"}.Sanitize()
	rs, err := tx.Query(ctx, `SELECT ts, tx_sig, tx_sig_index, record FROM `+fills+
		` WHERE account = $1 AND symbol = $2 ORDER BY ts, slot, tx_sig, tx_sig_index`, k.account, k.symbol)
	if err != nil {
		return fmt.Errorf("read the fills of %v: %w", k, err)
	}
	type update struct {
		ts       int64
		sig      string
		idx      int32
		position []byte
	}
	var updates []update
	pos := user.NewPosition()
	var last user.Pos
	var ts int64
	var sig string
	var idx int32
	var record []byte
	_, err = pgx.ForEachRow(rs, []any{&ts, &sig, &idx, &record}, func() error {
		f := new(events.Fill)
		if err := json.Unmarshal(record, f); err != nil {
			return fmt.Errorf("stored fill %s/%d: %w", sig, idx, err)
		}
		var side user.Side
		for _, s := range user.Sides(f) {
			if s.Account == k.account {
				side = s
			}
		}
		r := &FillRow{Fill: f, Side: side, Record: slices.Clone(record)}
		closed, err := apply(&pos, r)
		if err != nil {
			return err
		}
		var p []byte
		if closed != nil {
			p = positionRecord(r.Record, side.Fee, closed)
		}
		updates = append(updates, update{ts, sig, idx, p})
		last = r.Pos()
		return nil
	})
	if err != nil {
		return fmt.Errorf("derive the positions of %v: %w", k, err)
	}
	var b pgx.Batch
	for _, u := range updates {
		var p any
		if u.position != nil {
			p = u.position
		}
		b.Queue(`UPDATE `+fills+` SET position = $5 WHERE account = $1 AND ts = $2 AND tx_sig = $3 AND tx_sig_index = $4`,
			k.account, u.ts, u.sig, u.idx, p)
	}
	b.Queue(`UPDATE `+in.t.positionState+` SET base = $3, quote_entry = $4, last_ts = $5, last_slot = $6, last_tx_sig = $7, last_index = $8
		WHERE account = $1 AND symbol = $2`, k.account, k.symbol, pos.Base.String(), pos.QuoteEntry.String(), last.Ts, last.Slot, last.TxSig, int32(last.Index))
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("save the positions of %v: %w", k, err)
	}
	return nil
}

// queueMarkets records the markets a batch mentions; existing entries are left as they are. In
// symbol order: writers of other partitions may insert the same new markets at once, and rows taken
// in one order cannot deadlock.
func queueMarkets(b *pgx.Batch, table string, ms map[string]events.Market) {
	if len(ms) == 0 {
		return
	}
	syms, idx, typ, flt := make([]string, 0, len(ms)), make([]int32, 0, len(ms)), make([]string, 0, len(ms)), make([]string, 0, len(ms))
	for _, sym := range slices.Sorted(maps.Keys(ms)) {
		m := ms[sym]
		syms, idx, typ, flt = append(syms, m.Symbol), append(idx, int32(m.Index)), append(typ, string(m.Type)), append(flt, m.Filter())
	}
	b.Queue(`INSERT INTO `+table+` (symbol, market_index, market_type, market_filter)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) ON CONFLICT (symbol) DO NOTHING`,
		syms, idx, typ, flt)
}

// saveMarkets runs queueMarkets on its own.
func saveMarkets(ctx context.Context, tx pgx.Tx, table string, ms map[string]events.Market) error {
	var b pgx.Batch
	queueMarkets(&b, table, ms)
	if b.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("save markets: %w", err)
	}
	return nil
}
