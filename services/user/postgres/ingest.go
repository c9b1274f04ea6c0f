package postgres

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/tidemark/tidemark/platform/pg"
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
		// The rows of a fill, one per account, are made as it is decoded, beside the writers.
		ingest.Prepared(events.TopicFills, prepareFill, in.writeFills),
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
	positionState, orders string
	markets               markets.Table
}

func tablesOf(schema string) tables {
	q := func(t string) string { return pg.Table(schema, t) }
	return tables{positionState: q("position_state"), orders: q("orders"), markets: markets.In(schema)}
}

// FillRow is one account's row of a fill: the fill as the API serves it to that account (user set),
// and, when the fill reduced the account's perp position, its closed-position record.
type FillRow struct {
	Fill     *events.Fill
	Side     user.Side
	Order    user.FillOrder // where the fill moves the account's position
	Record   []byte
	Position []byte // nil when the fill closed nothing
	// BaseAfter and QuoteEntryAfter are the account's position in the market once the fill is
	// applied, in decimal; "" for spot fills and for rows not applied (a late fill, until its market
	// is derived again).
	BaseAfter, QuoteEntryAfter string
}

// FillsTable is how fills are stored: the ingest writes through it, and benchmarks COPY the same rows
// into the same table for their baseline.
func FillsTable(schema string) ingest.Table[*FillRow] {
	return ingest.Table[*FillRow]{
		Name: schema + ".fills",
		Columns: []string{"account", "ts", "tx_sig", "tx_sig_index", "slot", "symbol", "prediction", "order_id", "record", "position",
			"base_after", "quote_entry_after", "fill_record_id"},
		Key: []string{"account", "ts", "tx_sig", "tx_sig_index"},
		Row: func(r *FillRow) []any {
			f := r.Fill
			var position any
			if r.Position != nil {
				position = r.Position
			}
			prediction := f.MarketFilter == events.FilterPrediction || events.MarketFilter(f.MarketType, f.Symbol) == events.FilterPrediction
			var base, quote any
			if r.BaseAfter != "" {
				base, quote = r.BaseAfter, r.QuoteEntryAfter
			}
			return []any{r.Side.Account, f.Ts, f.TxSig, int32(f.TxSigIndex), f.Slot, f.Symbol, prediction, r.Side.OrderID, r.Record, position,
				base, quote, r.Order.ID}
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
func (in *Ingest) writeFills(ctx context.Context, tx pgx.Tx, prepared [][]*FillRow) error {
	rows, ms := collect(prepared)
	positions, err := in.positions(ctx, tx, rows)
	if err != nil {
		return err
	}
	// Rows are written in fill order, and each moves its position as it is sent: the position
	// arithmetic runs while Postgres takes the rows before it, not ahead of them all.
	slices.SortStableFunc(rows, func(x, y *FillRow) int { return x.Order.Compare(y.Order) })
	var applyErr error
	table := FillsTable(in.schema)
	row := table.Row
	table.Row = func(r *FillRow) []any {
		if err := positions.applyOne(r); err != nil && applyErr == nil {
			applyErr = err
		}
		return row(r)
	}
	fresh, err := table.Insert(ctx, tx, rows)
	if applyErr != nil {
		return applyErr
	}
	if err != nil {
		return fmt.Errorf("insert fills: %w", err)
	}
	// The oldest late row of each position: its market is derived again from there.
	late := map[positionKey]user.FillOrder{}
	for _, r := range fresh {
		if k := positionKeyOf(r); positions.isLate(k, r) {
			if from, ok := late[k]; !ok || r.Order.Compare(from) < 0 {
				late[k] = r.Order
			}
		}
	}
	var b pgx.Batch
	in.t.markets.Queue(&b, ms)
	positions.queueSave(&b, in.t.positionState)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("save markets and positions: %w", err)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(late), cmpKeys) {
		if err := in.rederive(ctx, tx, k, late[k]); err != nil {
			return err
		}
	}
	return nil
}

// BaselineRows are the rows a first ingest of evs writes into an empty schema (closed positions
// included): what benchmarks COPY for their baseline.
func BaselineRows(evs []ingest.Event[*events.Fill]) ([]*FillRow, error) {
	prepared := make([][]*FillRow, len(evs))
	for i, e := range evs {
		rows, err := prepareFill(e)
		if err != nil {
			return nil, err
		}
		prepared[i] = rows
	}
	rows, _ := collect(prepared)
	book := newPositionBook()
	return rows, book.apply(rows)
}

// prepareFill makes a fill's rows, one for each account it belongs to. A perp fill that cannot move a
// position (negative amounts) is refused here, so that it goes to the DLQ rather than stopping its
// partition at the arithmetic.
func prepareFill(e ingest.Event[*events.Fill]) ([]*FillRow, error) {
	f := e.Record
	if f.MarketType == events.MarketTypePerp {
		for _, a := range []struct {
			name string
			v    events.Amount
		}{{"baseAssetAmountFilled", f.BaseAssetAmountFilled}, {"quoteAssetAmountFilled", f.QuoteAssetAmountFilled}} {
			if strings.HasPrefix(string(a.v), "-") {
				return nil, fmt.Errorf("fill %s/%d: %s %s is negative", f.TxSig, f.TxSigIndex, a.name, a.v)
			}
		}
	}
	// Validated as an unsigned integer; the protocol's counters stay far below 2^63.
	id, err := strconv.ParseInt(f.FillRecordID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("fill %s/%d: fillRecordId %s does not fit 63 bits", f.TxSig, f.TxSigIndex, f.FillRecordID)
	}
	order := user.FillOrder{Ts: f.Ts, ID: id}
	sides := user.Sides(f)
	rows := make([]*FillRow, 0, len(sides))
	for _, side := range sides {
		rec, err := withUser(f, e.JSON, side.Account)
		if err != nil {
			return nil, err
		}
		rows = append(rows, &FillRow{Fill: f, Side: side, Order: order, Record: rec})
	}
	return rows, nil
}

// collect flattens a batch's rows, leaving out a fill's row for an account that the batch already
// holds (the same fill twice in one batch), and returns the markets they name.
func collect(prepared [][]*FillRow) ([]*FillRow, map[string]events.Market) {
	n := 0
	for _, p := range prepared {
		n += len(p)
	}
	rows := make([]*FillRow, 0, n)
	type key struct { // the table's key
		account, txSig string
		ts             int64
		index          int
	}
	seen := make(map[key]bool, n)
	markets := map[string]events.Market{}
	for _, p := range prepared {
		for _, r := range p {
			k := key{r.Side.Account, r.Fill.TxSig, r.Fill.Ts, r.Fill.TxSigIndex}
			if seen[k] {
				continue
			}
			seen[k] = true
			rows = append(rows, r)
			if f := r.Fill; f.Symbol != "" {
				if _, ok := markets[f.Symbol]; !ok {
					markets[f.Symbol] = events.Market{Symbol: f.Symbol, Index: f.MarketIndex, Type: f.MarketType}
				}
			}
		}
	}
	return rows, markets
}

// positionKey is one account's position in one market.
type positionKey struct{ account, symbol string }

func positionKeyOf(r *FillRow) positionKey { return positionKey{r.Side.Account, r.Fill.Symbol} }

// positionBook is the positions a batch of fills moves: their state before the batch and after it.
//
// A book belongs to one attempt at writing a batch: the consumer writes a batch again with the same
// rows when its transaction fails, and what the failed attempt moved was rolled back with it, so
// which rows were applied is the book's to know, not the rows'.
type positionBook struct {
	before  map[positionKey]user.FillOrder // the last fill applied before the batch; absent: none
	after   map[positionKey]*positionState
	applied map[*FillRow]bool // the rows this attempt has moved its positions by (or found it should not)
}

type positionState struct {
	pos  user.Position
	last user.FillOrder
}

func newPositionBook() *positionBook {
	return &positionBook{before: map[positionKey]user.FillOrder{}, after: map[positionKey]*positionState{},
		applied: map[*FillRow]bool{}}
}

// positions reads (and locks) the state of the positions rows move, for applying them as they are
// written (applyOne).
func (in *Ingest) positions(ctx context.Context, tx pgx.Tx, rows []*FillRow) (*positionBook, error) {
	book := newPositionBook()
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
	sorted := slices.SortedFunc(maps.Keys(keys), cmpKeys)
	accounts, symbols := make([]string, len(sorted)), make([]string, len(sorted))
	for i, k := range sorted {
		accounts[i], symbols[i] = k.account, k.symbol
	}
	rs, err := tx.Query(ctx, `SELECT s.account, s.symbol, s.base::text, s.quote_entry::text, s.last_ts, s.last_fill_record_id
		FROM `+in.t.positionState+` s JOIN unnest($1::text[], $2::text[]) AS k(account, symbol) USING (account, symbol)
		ORDER BY s.account, s.symbol FOR UPDATE OF s`, accounts, symbols)
	if err != nil {
		return nil, fmt.Errorf("read positions: %w", err)
	}
	var k positionKey
	var base, quote string
	var last user.FillOrder
	_, err = pgx.ForEachRow(rs, []any{&k.account, &k.symbol, &base, &quote, &last.Ts, &last.ID}, func() error {
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
	return book, nil
}

// apply moves the book's positions by rows, in order, setting the closed-position record of the rows
// that closed something.
func (b *positionBook) apply(rows []*FillRow) error {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(x, y *FillRow) int { return x.Order.Compare(y.Order) })
	for _, r := range sorted {
		if err := b.applyOne(r); err != nil {
			return err
		}
	}
	return nil
}

// applyOne moves r's position by r, which must come after every row applied before it in fill order.
// A row no newer than its position's last fill is left alone: a replay, or a late fill (isLate tells
// once the insert has said which rows are new). A row is applied once, however often it is asked.
func (b *positionBook) applyOne(r *FillRow) error {
	if b.applied[r] || r.Fill.MarketType != events.MarketTypePerp {
		return nil
	}
	b.applied[r] = true
	// What an earlier attempt derived for the row was rolled back with its position.
	r.Position, r.BaseAfter, r.QuoteEntryAfter = nil, "", ""
	k := positionKeyOf(r)
	st := b.after[k]
	if st == nil {
		st = &positionState{pos: user.NewPosition()}
		b.after[k] = st
	} else if r.Order.Compare(st.last) <= 0 {
		return nil
	}
	if err := r.move(&st.pos); err != nil {
		return err
	}
	st.last = r.Order
	return nil
}

// move moves pos by the fill of r and sets what r keeps of it: the closed-position record when the
// fill closed something, and the position after it.
func (r *FillRow) move(pos *user.Position) error {
	closed, err := apply(pos, r)
	if err != nil {
		return err
	}
	if closed != nil {
		r.Position = positionRecord(r.Record, r.Side.Fee, closed)
	}
	r.BaseAfter, r.QuoteEntryAfter = pos.Base.String(), pos.QuoteEntry.String()
	return nil
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
	return ok && r.Order.Compare(last) <= 0
}

func (b *positionBook) queueSave(batch *pgx.Batch, table string) {
	if len(b.after) == 0 {
		return
	}
	keys := slices.SortedFunc(maps.Keys(b.after), cmpKeys)
	n := len(keys)
	accounts, symbols, bases, quotes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ts, ids := make([]int64, n), make([]int64, n)
	for i, k := range keys {
		st := b.after[k]
		accounts[i], symbols[i], bases[i], quotes[i] = k.account, k.symbol, st.pos.Base.String(), st.pos.QuoteEntry.String()
		ts[i], ids[i] = st.last.Ts, st.last.ID
	}
	batch.Queue(`INSERT INTO `+table+` AS s (account, symbol, base, quote_entry, last_ts, last_fill_record_id)
		SELECT * FROM unnest($1::text[], $2::text[], $3::numeric[], $4::numeric[], $5::bigint[], $6::bigint[])
		ON CONFLICT (account, symbol) DO UPDATE SET base = excluded.base, quote_entry = excluded.quote_entry,
			last_ts = excluded.last_ts, last_fill_record_id = excluded.last_fill_record_id`,
		accounts, symbols, bases, quotes, ts, ids)
}

func cmpKeys(a, b positionKey) int {
	return cmp.Or(strings.Compare(a.account, b.account), strings.Compare(a.symbol, b.symbol))
}

// rederive derives the position records of k again from the late row at from onwards: each row keeps
// the position after it, so the derivation starts from the row before from and rewrites only the rows
// after it, a handful for a fill that arrived a moment late.
func (in *Ingest) rederive(ctx context.Context, tx pgx.Tx, k positionKey, from user.FillOrder) error {
	fills := pg.Table(in.schema, "fills")
	pos := user.NewPosition()
	var base, quote string
	err := tx.QueryRow(ctx, `SELECT base_after::text, quote_entry_after::text FROM `+fills+`
		WHERE account = $1 AND symbol = $2 AND base_after IS NOT NULL AND ts <= $3 AND (ts, fill_record_id) < ($3, $4)
		ORDER BY ts DESC, fill_record_id DESC LIMIT 1`,
		k.account, k.symbol, from.Ts, from.ID).Scan(&base, &quote)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("read the position of %v before %v: %w", k, from, err)
	default:
		b, ok1 := new(big.Int).SetString(base, 10)
		q, ok2 := new(big.Int).SetString(quote, 10)
		if !ok1 || !ok2 {
			return fmt.Errorf("stored position of %v: %s, %s", k, base, quote)
		}
		pos = user.Position{Base: b, QuoteEntry: q}
	}
	rs, err := tx.Query(ctx, `SELECT record, fill_record_id FROM `+fills+` WHERE account = $1 AND symbol = $2 AND ts >= $3
		AND (ts, fill_record_id) >= ($3, $4) ORDER BY ts, fill_record_id`,
		k.account, k.symbol, from.Ts, from.ID)
	if err != nil {
		return fmt.Errorf("read the fills of %v from %v: %w", k, from, err)
	}
	var rows []*FillRow
	var record []byte
	var id int64
	_, err = pgx.ForEachRow(rs, []any{&record, &id}, func() error {
		f := new(events.Fill)
		if err := json.Unmarshal(record, f); err != nil {
			return fmt.Errorf("stored fill of %v: %w", k, err)
		}
		r := &FillRow{Fill: f, Order: user.FillOrder{Ts: f.Ts, ID: id}, Record: slices.Clone(record)}
		for _, s := range user.Sides(f) {
			if s.Account == k.account {
				r.Side = s
			}
		}
		if err := r.move(&pos); err != nil {
			return err
		}
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("derive the positions of %v: %w", k, err)
	}
	var b pgx.Batch
	for _, r := range rows {
		var p any
		if r.Position != nil {
			p = r.Position
		}
		f := r.Fill
		b.Queue(`UPDATE `+fills+` SET position = $5, base_after = $6, quote_entry_after = $7
			WHERE account = $1 AND ts = $2 AND tx_sig = $3 AND tx_sig_index = $4`,
			k.account, f.Ts, f.TxSig, int32(f.TxSigIndex), p, r.BaseAfter, r.QuoteEntryAfter)
	}
	if n := len(rows); n > 0 {
		last := rows[n-1]
		b.Queue(`UPDATE `+in.t.positionState+` SET base = $3, quote_entry = $4, last_ts = $5, last_fill_record_id = $6
			WHERE account = $1 AND symbol = $2`, k.account, k.symbol, last.BaseAfter, last.QuoteEntryAfter,
			last.Order.Ts, last.Order.ID)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("save the positions of %v: %w", k, err)
	}
	return nil
}
