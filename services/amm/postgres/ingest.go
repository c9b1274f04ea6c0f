package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/amm"
)

// Ingest writes protocol.market-states into the amm schema: each state into the raw states of its
// day, unless older than the raw retention, and into the rollup.
type Ingest struct {
	schema    string
	markets   markets.Table
	retention time.Duration
	now       func() time.Time
	rollup    string
	upsert    string
}

// NewIngest writes into schema; states older than now-retention go to the rollup only (their day's
// partition is dropped, or about to be).
func NewIngest(schema string, retention time.Duration, now func() time.Time) *Ingest {
	rollup := pg.Table(schema, "rollup")
	return &Ingest{
		schema: schema, markets: markets.In(schema), retention: retention, now: now,
		rollup: `SELECT symbol, row, start, chunk FROM ` + rollup + `
WHERE (symbol, start) IN (SELECT * FROM unnest($1::text[], $2::bigint[])) ORDER BY symbol, start, row FOR UPDATE`,
		upsert: `INSERT INTO ` + rollup + ` (symbol, row, start, chunk)
SELECT * FROM unnest($1::text[], $2::smallint[], $3::bigint[], $4::bytea[])
ON CONFLICT (symbol, row, start) DO UPDATE SET chunk = excluded.chunk`,
	}
}

// Sinks returns the sink of protocol.market-states.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{ingest.Prepared(events.TopicMarketStates, Prepare, in.write)}
}

// Prepare reduces a state's record to what the series show; a value beyond int64 sends it to the DLQ.
func Prepare(e ingest.Event[*events.MarketState]) (amm.State, error) { return amm.StateOf(e.Record) }

// RawTable is how raw states are stored: the ingest writes through it, and benchmarks COPY the same
// rows into the same table for their baseline.
func RawTable(schema string) ingest.Table[amm.State] {
	return ingest.Table[amm.State]{
		Name: schema + "." + StatesTable,
		Columns: []string{"ts", "slot", "symbol", "oracle_price", "bid_price", "ask_price", "long_spread", "short_spread",
			"amm_position", "open_interest"},
		Key: []string{"symbol", "ts", "slot"},
		Row: RawRow,
	}
}

// RawRow is the row of the states table of st.
func RawRow(st amm.State) []any {
	if !st.Perp {
		return []any{st.Ts, st.Slot, st.Symbol, st.Oracle, nil, nil, nil, nil, nil, nil}
	}
	return []any{st.Ts, st.Slot, st.Symbol, st.Oracle, st.Bid, st.Ask, st.LongSpread, st.ShortSpread, st.Position, st.OpenInterest}
}

func (in *Ingest) write(ctx context.Context, tx pgx.Tx, states []amm.State) error {
	cutoff := in.now().Add(-in.retention).Unix()
	raw := states
	if slices.ContainsFunc(states, func(st amm.State) bool { return st.Ts < cutoff }) {
		raw = slices.DeleteFunc(slices.Clone(states), func(st amm.State) bool { return st.Ts < cutoff })
	}
	// Every state is folded in, not only those new to the raw table: folding is idempotent, and
	// states past the raw retention have no raw row to be new in.
	if _, err := RawTable(in.schema).Insert(ctx, tx, raw); err != nil {
		return fmt.Errorf("insert market states: %w", err)
	}
	if err := in.markets.Save(ctx, tx, markets.Of(states, func(st amm.State) events.Market { return st.Market() })); err != nil {
		return err
	}
	return in.fold(ctx, tx, states)
}

// chunkKey is one market's chunk.
type chunkKey struct {
	symbol string
	start  int64
}

// fold folds states into the rollup: the chunks they fall in are read and locked, folded in memory
// and written back, in (symbol, start) order.
func (in *Ingest) fold(ctx context.Context, tx pgx.Tx, states []amm.State) error {
	byChunk := map[chunkKey][]amm.State{}
	for _, st := range states {
		k := chunkKey{st.Symbol, amm.ChunkStart(st.Ts)}
		byChunk[k] = append(byChunk[k], st)
	}
	keys := make([]chunkKey, 0, len(byChunk))
	for k := range byChunk {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b chunkKey) int { return cmp.Or(cmp.Compare(a.symbol, b.symbol), cmp.Compare(a.start, b.start)) })
	syms, starts := make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		syms[i], starts[i] = k.symbol, k.start
	}
	chunks := make(map[chunkKey]map[amm.Row][]byte, len(keys))
	for _, k := range keys {
		chunks[k] = map[amm.Row][]byte{}
	}
	rows, err := tx.Query(ctx, in.rollup, syms, starts)
	if err != nil {
		return fmt.Errorf("read rollup chunks: %w", err)
	}
	var k chunkKey
	var row int16
	var data []byte
	_, err = pgx.ForEachRow(rows, []any{&k.symbol, &row, &k.start, &data}, func() error {
		if m := chunks[k]; m != nil {
			m[amm.Row(row)] = data
			data = nil // the next row scans into a fresh slice
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read rollup chunks: %w", err)
	}
	var outSym []string
	var outRow []int16
	var outStart []int64
	var outChunk [][]byte
	for _, k := range keys {
		changed, err := amm.Fold(k.start, chunks[k], byChunk[k])
		if err != nil {
			return err
		}
		if !changed {
			continue
		}
		for _, r := range amm.Rows {
			if c, ok := chunks[k][r]; ok {
				outSym, outRow, outStart, outChunk = append(outSym, k.symbol), append(outRow, int16(r)), append(outStart, k.start), append(outChunk, c)
			}
		}
	}
	if len(outSym) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, in.upsert, outSym, outRow, outStart, outChunk); err != nil {
		return fmt.Errorf("write rollup chunks: %w", err)
	}
	return nil
}
