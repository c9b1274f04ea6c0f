package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/market"
)

// Ingest writes the topics the market service consumes into its schema.
type Ingest struct {
	schema  string
	markets markets.Table
	now     func() time.Time
	// EdgeWindow bounds which candle changes are published to edge.candles: only buckets touched by
	// fills newer than now-EdgeWindow. Backfilled history would otherwise flood the WebSocket edge with
	// changes no live chart shows.
	edgeWindow time.Duration
	// hot, when not nil, is told of this process' candle changes before they commit, so that it
	// leaves their markets to the store until it has read them back.
	hot *market.Hot
}

// NewIngest writes into schema.
func NewIngest(schema string, edgeWindow time.Duration, now func() time.Time) *Ingest {
	return &Ingest{schema: schema, markets: markets.In(schema), now: now, edgeWindow: edgeWindow}
}

// WithHot tells hot, the replica's memory of candles, of the candle changes in before they commit,
// and returns in.
func (in *Ingest) WithHot(hot *market.Hot) *Ingest {
	in.hot = hot
	return in
}

// Sinks returns one sink per consumed topic.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{
		ingest.Records(events.TopicFills, in.writeFills),
		ingest.Records(events.TopicFundingRates, records(in.writeFundingRates)),
		ingest.Records(events.TopicInsuranceFund, records(in.writeInsuranceFund)),
		ingest.Records(events.TopicIFStakes, records(in.writeIFStakes)),
		ingest.Records(events.TopicSwaps, records(in.writeSwaps)),
		ingest.Records(events.TopicDeposits, records(in.writeDeposits)),
	}
}

// StoredFill is a decoded fill with the JSON the API serves for it: its message value.
type StoredFill = ingest.Event[*events.Fill]

// records adapts a writer of records to the events of a sink.
func records[T events.Record](write func(ctx context.Context, tx pgx.Tx, recs []T) error) func(context.Context, pgx.Tx, []ingest.Event[T]) error {
	return func(ctx context.Context, tx pgx.Tx, evs []ingest.Event[T]) error {
		recs := make([]T, len(evs))
		for i, e := range evs {
			recs[i] = e.Record
		}
		return write(ctx, tx, recs)
	}
}

// marshal re-encodes a record as the API emits it, so stored bytes are canonical whatever the
// producer's field order or whitespace.
func marshal(r any) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("market: encode %T: %v", r, err)) // records are plain structs: cannot fail
	}
	return b
}

// FillsTable is how fills are stored: the ingest writes through it, and benchmarks COPY the same
// rows into the same table for their baseline.
func FillsTable(schema string) ingest.Table[StoredFill] {
	return ingest.Table[StoredFill]{
		Name:    schema + ".fills",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "market_index", "market_type", "fill_record_id", "taker", "maker", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(e StoredFill) []any {
			f := e.Record
			id, _ := strconv.ParseInt(f.FillRecordID, 10, 64) // validated digits
			return []any{f.Ts, f.TxSig, int32(f.TxSigIndex), f.Slot, f.Symbol, int32(f.MarketIndex), string(f.MarketType), id, f.Taker, f.Maker, e.JSON}
		},
	}
}

func (in *Ingest) writeFills(ctx context.Context, tx pgx.Tx, fills []StoredFill) error {
	// The candle arithmetic needs no database, so it runs while Postgres copies the fills, on the
	// bet that every fill is new (only a replayed batch holds known ones).
	pre := make(chan candleDeltas, 1)
	go func() { pre <- aggregate(fills) }()
	fresh, err := FillsTable(in.schema).Insert(ctx, tx, fills)
	deltas := <-pre
	if err != nil {
		return fmt.Errorf("insert fills: %w", err)
	}
	if len(fresh) != len(fills) {
		// Only fills this transaction inserted move candles: a replayed batch inserts none and so
		// cannot count a fill twice. Its known fills' markets were recorded with them.
		deltas = aggregate(fresh)
	}
	// One round trip for both: between statements the consumer's busy goroutines can keep this
	// one waiting for the scheduler while the server idles.
	var batch pgx.Batch
	in.markets.Queue(&batch, deltas.markets)
	created := in.queueCandles(&batch, deltas.deltas)
	changed := changedRanges(deltas.deltas)
	var xid *int64
	if len(changed) > 0 {
		xid = queueNotify(&batch, in.schema, changed)
	}
	if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
		return fmt.Errorf("upsert markets and candles: %w", err)
	}
	if in.hot != nil && xid != nil {
		symbols := make([]string, 0, len(changed))
		for sym := range changed {
			symbols = append(symbols, sym)
		}
		in.hot.Pending(*xid, symbols)
	}
	return in.publishCandles(ctx, tx, deltas.deltas, created, deltas.fills)
}

func (in *Ingest) writeFundingRates(ctx context.Context, tx pgx.Tx, recs []*events.FundingRate) error {
	t := ingest.Table[*events.FundingRate]{
		Name:    in.schema + ".funding_rates",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "market_index", "record_id", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.FundingRate) []any {
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.Symbol, int32(r.MarketIndex), r.RecordID, marshal(r)}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert funding rates: %w", err)
	}
	return in.markets.Save(ctx, tx, markets.Of(recs, func(r *events.FundingRate) events.Market {
		return events.Market{Symbol: r.Symbol, Index: r.MarketIndex, Type: events.MarketTypePerp}
	}))
}

func (in *Ingest) writeInsuranceFund(ctx context.Context, tx pgx.Tx, recs []*events.InsuranceFund) error {
	t := ingest.Table[*events.InsuranceFund]{
		Name:    in.schema + ".insurance_fund",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "spot_market_index", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.InsuranceFund) []any {
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.Symbol, int32(r.SpotMarketIndex), marshal(r)}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert insurance fund records: %w", err)
	}
	return in.markets.Save(ctx, tx, markets.Of(recs, func(r *events.InsuranceFund) events.Market {
		return events.Market{Symbol: r.Symbol, Index: r.SpotMarketIndex, Type: events.MarketTypeSpot}
	}))
}

func (in *Ingest) writeIFStakes(ctx context.Context, tx pgx.Tx, recs []*events.IFStake) error {
	// symbol is optional on the record: resolve it from the spot market's index so the stake can be
	// listed under its market, and store it on the record the API serves.
	symbols := map[int]string{}
	for _, r := range recs {
		if r.Symbol != "" {
			continue
		}
		sym, ok := symbols[r.MarketIndex]
		if !ok {
			err := tx.QueryRow(ctx, `SELECT symbol FROM `+pg.Table(in.schema, "markets")+` WHERE market_type = 'spot' AND market_index = $1`,
				r.MarketIndex).Scan(&sym)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("resolve spot market %d: %w", r.MarketIndex, err)
			}
			symbols[r.MarketIndex] = sym
		}
		r.Symbol = sym
	}
	t := ingest.Table[*events.IFStake]{
		Name:    in.schema + ".if_stakes",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "market_index", "user_authority", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.IFStake) []any {
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.Symbol, int32(r.MarketIndex), r.UserAuthority, marshal(r)}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert IF stakes: %w", err)
	}
	return nil
}

func (in *Ingest) writeSwaps(ctx context.Context, tx pgx.Tx, recs []*events.Swap) error {
	t := ingest.Table[*events.Swap]{
		Name:    in.schema + ".swaps",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "in_symbol", "out_symbol", "user", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.Swap) []any {
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.InSymbol, r.OutSymbol, r.User, marshal(r)}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert swaps: %w", err)
	}
	return nil
}

func (in *Ingest) writeDeposits(ctx context.Context, tx pgx.Tx, recs []*events.Deposit) error {
	t := ingest.Table[*events.Deposit]{
		Name:    in.schema + ".deposits",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "slot", "symbol", "category", "user", "record"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index"},
		Row: func(r *events.Deposit) []any {
			cat := "deposit"
			if r.Explanation == events.DepositExplanationReward {
				cat = "reward"
			}
			return []any{r.Ts, r.TxSig, int32(r.TxSigIndex), r.Slot, r.Symbol, cat, r.User, marshal(r)}
		},
	}
	if _, err := t.Insert(ctx, tx, recs); err != nil {
		return fmt.Errorf("insert deposits: %w", err)
	}
	return in.markets.Save(ctx, tx, markets.Of(recs, func(r *events.Deposit) events.Market {
		return events.Market{Symbol: r.Symbol, Index: r.MarketIndex, Type: events.MarketTypeSpot}
	}))
}

// candleDeltas is what a batch of fills does to the candles.
type candleDeltas struct {
	deltas  []*market.Delta
	fills   []*events.Fill // the fills the deltas' Trades index
	markets map[string]events.Market
}

// aggregate also collects the batch's markets: it runs beside the COPY, and the loop over a batch
// took a millisecond of the transaction, with the server idle, when it ran after it.
func aggregate(fills []StoredFill) candleDeltas {
	trades := make([]market.Trade, 0, len(fills))
	src := make([]*events.Fill, 0, len(fills))
	markets := map[string]events.Market{}
	for _, e := range fills {
		f := e.Record
		if _, ok := markets[f.Symbol]; !ok {
			markets[f.Symbol] = events.Market{Symbol: f.Symbol, Index: f.MarketIndex, Type: f.MarketType}
		}
		t, ok := market.TradeOf(f.Symbol, f.Ts, f.FillRecordID, string(f.QuoteAssetAmountFilled), string(f.BaseAssetAmountFilled), string(f.OraclePrice))
		if !ok {
			continue
		}
		trades = append(trades, t)
		src = append(src, f)
	}
	return candleDeltas{deltas: market.Aggregate(trades), fills: src, markets: markets}
}

// queueCandles queues the statement folding a batch's deltas into every resolution's buckets. The
// map it returns tells, once the batch has run, which buckets the statement created.
func (in *Ingest) queueCandles(b *pgx.Batch, deltas []*market.Delta) map[bucketKey]bool {
	n := len(deltas)
	if n == 0 {
		return nil
	}
	var (
		sym, res                                         = make([]string, n), make([]string, n)
		ts, firstTs, firstID, lastTs, lastID             = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		fFirst, oFirst, fHigh, fLow, oHigh, oLow, fClose = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		oClose                                           = make([]float64, n)
		quote, base                                      = make([]string, n), make([]string, n)
	)
	for i, d := range deltas {
		sym[i], res[i], ts[i] = d.Symbol, string(d.Resolution), d.Ts
		firstTs[i], firstID[i], fFirst[i], oFirst[i] = d.FirstTs, d.FirstID, d.FillFirst, d.OracleFirst
		lastTs[i], lastID[i], fClose[i], oClose[i] = d.LastTs, d.LastID, d.FillClose, d.OracleClose
		fHigh[i], fLow[i], oHigh[i], oLow[i] = d.FillHigh, d.FillLow, d.OracleHigh, d.OracleLow
		quote[i], base[i] = d.Quote.String(), d.Base.String()
	}
	c := pg.Table(in.schema, "candles")
	created := make(map[bucketKey]bool, n)
	b.Queue(`INSERT INTO `+c+` AS c (symbol, resolution, ts, first_ts, first_id, fill_first, oracle_first,
			fill_high, fill_low, oracle_high, oracle_low, last_ts, last_id, fill_close, oracle_close, quote_volume, base_volume)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::float8[], $7::float8[],
			$8::float8[], $9::float8[], $10::float8[], $11::float8[], $12::bigint[], $13::bigint[], $14::float8[], $15::float8[],
			$16::numeric[], $17::numeric[])
		ON CONFLICT (symbol, resolution, ts) DO UPDATE SET
			fill_high = greatest(c.fill_high, excluded.fill_high),
			fill_low = least(c.fill_low, excluded.fill_low),
			oracle_high = greatest(c.oracle_high, excluded.oracle_high),
			oracle_low = least(c.oracle_low, excluded.oracle_low),
			quote_volume = c.quote_volume + excluded.quote_volume,
			base_volume = c.base_volume + excluded.base_volume,
			fill_first = CASE WHEN (excluded.first_ts, excluded.first_id) < (c.first_ts, c.first_id) THEN excluded.fill_first ELSE c.fill_first END,
			oracle_first = CASE WHEN (excluded.first_ts, excluded.first_id) < (c.first_ts, c.first_id) THEN excluded.oracle_first ELSE c.oracle_first END,
			first_id = CASE WHEN (excluded.first_ts, excluded.first_id) < (c.first_ts, c.first_id) THEN excluded.first_id ELSE c.first_id END,
			first_ts = least(c.first_ts, excluded.first_ts),
			fill_close = CASE WHEN (excluded.last_ts, excluded.last_id) > (c.last_ts, c.last_id) THEN excluded.fill_close ELSE c.fill_close END,
			oracle_close = CASE WHEN (excluded.last_ts, excluded.last_id) > (c.last_ts, c.last_id) THEN excluded.oracle_close ELSE c.oracle_close END,
			last_id = CASE WHEN (excluded.last_ts, excluded.last_id) > (c.last_ts, c.last_id) THEN excluded.last_id ELSE c.last_id END,
			last_ts = greatest(c.last_ts, excluded.last_ts)
		RETURNING symbol, resolution, ts, (xmax = 0)`,
		sym, res, ts, firstTs, firstID, fFirst, oFirst, fHigh, fLow, oHigh, oLow, lastTs, lastID, fClose, oClose, quote, base,
	).Query(func(rows pgx.Rows) error {
		// xmax = 0 marks a row this statement inserted rather than updated: the bucket's first trade.
		var k bucketKey
		var c bool
		_, err := pgx.ForEachRow(rows, []any{&k.symbol, &k.res, &k.ts, &c}, func() error {
			created[k] = c
			return nil
		})
		return err
	})
	return created
}

// changedRanges is the span of fill times the deltas fold in, by market.
func changedRanges(deltas []*market.Delta) map[string]changeRange {
	out := map[string]changeRange{}
	for _, d := range deltas {
		r, ok := out[d.Symbol]
		if !ok {
			r = changeRange{d.FirstTs, d.LastTs}
		}
		out[d.Symbol] = changeRange{min(r.lo, d.FirstTs), max(r.hi, d.LastTs)}
	}
	return out
}

type bucketKey struct {
	symbol, res string
	ts          int64
}

// publishCandles writes one edge.candles message per recent changed bucket into the outbox, with the
// candle as stored after this transaction and the fills that changed it.
func (in *Ingest) publishCandles(ctx context.Context, tx pgx.Tx, deltas []*market.Delta, created map[bucketKey]bool, fills []*events.Fill) error {
	cutoff := in.now().Add(-in.edgeWindow).Unix()
	var msgs []events.Message
	// One round trip reads every recent changed bucket, as stored after this transaction's upsert.
	var recent []*market.Delta
	var batch pgx.Batch
	for _, d := range deltas {
		if d.LastTs >= cutoff {
			recent = append(recent, d)
			queueCandles(&batch, in.schema, d.Symbol, d.Resolution, d.Ts, d.Ts)
		}
	}
	if len(recent) == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &batch)
	defer br.Close()
	for _, d := range recent {
		stored, before, err := readCandles(br)
		if err != nil {
			return err
		}
		if len(stored) != 1 {
			return fmt.Errorf("candle %s %s %d vanished inside its transaction", d.Symbol, d.Resolution, d.Ts)
		}
		b := stored[0]
		msg := market.EdgeCandleMessage{
			Type: "update", Symbol: d.Symbol, Resolution: string(d.Resolution),
			Candle: market.EdgeCandle{
				Symbol: d.Symbol, Resolution: string(d.Resolution), Candle: market.CandleOf(b, before),
				LastTradeTs: &b.LastTradeTs, LastFillRecordID: &b.LastFillRecordID,
			},
			Trades: make([]market.EdgeTrade, 0, len(d.Trades)),
		}
		if created[bucketKey{d.Symbol, string(d.Resolution), d.Ts}] {
			msg.Type = "create"
		}
		for _, ti := range d.Trades {
			msg.Trades = append(msg.Trades, edgeTrade(fills[ti]))
		}
		m, err := events.NewMessage(events.TopicEdgeCandles, d.Symbol, "candle", msg)
		if err != nil {
			return err
		}
		// Numbered in its channel by the outbox; keyed by symbol, so every resolution of a market
		// goes to one partition, in the order of the numbers.
		msgs = append(msgs, events.InChannel(m, events.CandleChannel(d.Symbol, string(d.Resolution))))
	}
	// The connection is busy until the batch's results are closed.
	if err := br.Close(); err != nil {
		return fmt.Errorf("read changed candles: %w", err)
	}
	if err := outbox.Add(ctx, tx, in.schema, msgs...); err != nil {
		return fmt.Errorf("queue candle changes: %w", err)
	}
	return nil
}

func edgeTrade(f *events.Fill) market.EdgeTrade {
	num := func(a events.Amount, scale float64) float64 {
		v, _ := strconv.ParseFloat(string(a), 64)
		return v / scale
	}
	return market.EdgeTrade{
		Ts: f.Ts, Slot: f.Slot, TxSig: f.TxSig, Action: string(f.Action), ActionExplanation: string(f.ActionExplanation),
		MarketType: string(f.MarketType), MarketIndex: f.MarketIndex, Symbol: f.Symbol, FillRecordID: f.FillRecordID,
		Taker: f.Taker, TakerOrderID: f.TakerOrderID, TakerOrderDirection: string(f.TakerOrderDirection),
		Maker: f.Maker, MakerOrderID: f.MakerOrderID, MakerOrderDirection: string(f.MakerOrderDirection),
		BaseAssetAmountFilled:  num(f.BaseAssetAmountFilled, 1e9),
		QuoteAssetAmountFilled: num(f.QuoteAssetAmountFilled, 1e6),
		OraclePrice:            num(f.OraclePrice, 1e6),
		TakerFee:               num(f.TakerFee, 1e6),
		MakerFee:               num(f.MakerFee, 1e6),
	}
}
