package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/services/stats"
)

// Store reads the stats schema: it is the stats.Store.
type Store struct {
	markets.Store
	t tables
}

// NewStore reads schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	return &Store{Store: markets.NewStore(pool, schema), t: tablesOf(schema)}
}

// querier is what reads need of a pool or a transaction.
type querier interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// windowSums is the SQL summing a market's buckets over a window, for the market m.symbol of the
// enclosing query: the window's whole hours from trade_hours, its edges from trade_minutes, each an
// index range of the market's key. args are appended to; the SQL names them by position.
func (s *Store) windowSums(w stats.Window, args *[]any) string {
	hours, minutes := w.Split()
	arg := func(v int64) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	const cols = `fills, quote, base, fill_high, fill_low, oracle_high, oracle_low`
	var parts []string
	if !hours.Empty() {
		parts = append(parts, `SELECT `+cols+` FROM `+s.t.tradeHours+` WHERE symbol = m.symbol AND ts >= `+arg(hours.From)+` AND ts < `+arg(hours.To))
	}
	for _, r := range minutes {
		parts = append(parts, `SELECT `+cols+` FROM `+s.t.tradeMinutes+` WHERE symbol = m.symbol AND ts >= `+arg(r.From)+` AND ts < `+arg(r.To))
	}
	return `SELECT sum(fills)::bigint AS fills, coalesce(sum(quote), 0)::text AS quote, coalesce(sum(base), 0)::text AS base,
		max(fill_high) AS fill_high, min(fill_low) AS fill_low, max(oracle_high) AS oracle_high, min(oracle_low) AS oracle_low
		FROM (` + strings.Join(parts, " UNION ALL ") + `) x`
}

// Markets implements stats.Store.
func (s *Store) Markets(ctx context.Context, w stats.Window) ([]stats.MarketData, error) {
	return s.marketData(ctx, s.Pool, w)
}

// marketData reads every market's data in one statement (and a second for the funding rates of
// perp markets whose states carry none): per market, its state, its newest minute, its last minute
// before the window and the window's sums, each a walk of one index.
func (s *Store) marketData(ctx context.Context, q querier, w stats.Window) ([]stats.MarketData, error) {
	args := []any{w.From}
	sums := s.windowSums(w, &args)
	rows, err := q.Query(ctx, `SELECT m.symbol, m.market_index, m.market_type, s.ts, s.slot, s.oracle_price, s.mark_price,
			s.oi_long, s.oi_short, s.open_interest, s.funding_long, s.funding_short,
			t.last_ts, t.last_slot, t.last_id, t.close, t.close_oracle,
			(SELECT close FROM `+s.t.tradeMinutes+` WHERE symbol = m.symbol AND ts < $1 ORDER BY ts DESC LIMIT 1),
			w.fills, w.quote, w.base, w.fill_high, w.fill_low, w.oracle_high, w.oracle_low
		FROM `+s.t.markets+` m
		LEFT JOIN `+s.t.marketStates+` s ON s.symbol = m.symbol
		LEFT JOIN LATERAL (SELECT last_ts, last_slot, last_id, close, close_oracle FROM `+s.t.tradeMinutes+`
			WHERE symbol = m.symbol ORDER BY ts DESC LIMIT 1) t ON true
		CROSS JOIN LATERAL (`+sums+`) w
		ORDER BY m.market_type, m.market_index, m.symbol`, args...)
	if err != nil {
		return nil, fmt.Errorf("read the markets: %w", err)
	}
	defer rows.Close()
	var out []stats.MarketData
	for rows.Next() {
		var d stats.MarketData
		var typ string
		var ts, slot, oracle, lastTs, lastSlot, lastID, lastPrice, lastOracle, fills *int64
		st := &stats.State{}
		if err := rows.Scan(&d.Market.Symbol, &d.Market.Index, &typ, &ts, &slot, &oracle, &st.MarkPrice,
			&st.OILong, &st.OIShort, &st.OpenInterest, &st.FundingLong, &st.FundingShort,
			&lastTs, &lastSlot, &lastID, &lastPrice, &lastOracle, &d.AgoPrice,
			&fills, &d.Window.Quote, &d.Window.Base, &d.Window.FillHigh, &d.Window.FillLow, &d.Window.OracleHigh, &d.Window.OracleLow); err != nil {
			return nil, fmt.Errorf("read the markets: %w", err)
		}
		d.Market.Type = events.MarketType(typ)
		if ts != nil {
			st.Ts, st.Slot, st.OraclePrice = *ts, *slot, *oracle
			d.State = st
		}
		if lastTs != nil {
			d.Last = &stats.LastTrade{Ts: *lastTs, Slot: *lastSlot, ID: *lastID, Price: *lastPrice, OraclePrice: *lastOracle}
		}
		if fills != nil {
			d.Window.Fills = *fills
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the markets: %w", err)
	}
	// Only markets with a price have a summary; perp markets whose state has no funding take their
	// newest funding rate update's.
	priced := out[:0]
	var needFunding []string
	for _, d := range out {
		if d.State == nil && d.Last == nil {
			continue
		}
		if d.Market.Type == events.MarketTypePerp && (d.State == nil || d.State.FundingLong == nil || d.State.FundingShort == nil) {
			needFunding = append(needFunding, d.Market.Symbol)
		}
		priced = append(priced, d)
	}
	if len(needFunding) > 0 {
		idx := map[string]int{}
		for i, d := range priced {
			idx[d.Market.Symbol] = i
		}
		rows, err := q.Query(ctx, `SELECT u.symbol, f.rate_long, f.rate_short FROM unnest($1::text[]) AS u(symbol)
			CROSS JOIN LATERAL (SELECT rate_long, rate_short FROM `+s.t.funding+` WHERE symbol = u.symbol ORDER BY ts DESC LIMIT 1) f`,
			needFunding)
		if err != nil {
			return nil, fmt.Errorf("read the newest funding rates: %w", err)
		}
		var sym, long, short string
		_, err = pgx.ForEachRow(rows, []any{&sym, &long, &short}, func() error {
			priced[idx[sym]].Funding = &stats.LongShort{Long: events.Amount(long), Short: events.Amount(short)}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read the newest funding rates: %w", err)
		}
	}
	return priced, nil
}

// Volumes implements stats.Store.
func (s *Store) Volumes(ctx context.Context, w stats.Window) ([]stats.MarketVolume, error) {
	var args []any
	sums := s.windowSums(w, &args)
	rows, err := s.Pool.Query(ctx, `SELECT m.symbol, m.market_index, m.market_type, w.quote, w.base FROM `+s.t.markets+` m
		CROSS JOIN LATERAL (`+sums+`) w ORDER BY m.market_type, m.market_index, m.symbol`, args...)
	if err != nil {
		return nil, fmt.Errorf("read volumes: %w", err)
	}
	var out []stats.MarketVolume
	var v stats.MarketVolume
	_, err = pgx.ForEachRow(rows, []any{&v.Symbol, &v.MarketIndex, &v.MarketType, &v.QuoteVolume, &v.BaseVolume}, func() error {
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read volumes: %w", err)
	}
	return out, nil
}

// FundingAverages implements stats.Store: one scan of the year's updates of each perp market, each
// window a filter of it.
func (s *Store) FundingAverages(ctx context.Context, now int64) ([]stats.FundingAverages, error) {
	var cols []string
	args := []any{now}
	for _, w := range stats.FundingWindows {
		args = append(args, now-w.Hours*stats.Hour)
		cols = append(cols, fmt.Sprintf("avg(f.rate_pct) FILTER (WHERE f.ts > $%d)", len(args)))
	}
	longest := stats.FundingWindows[len(stats.FundingWindows)-1].Hours * stats.Hour
	args = append(args, now-longest)
	rows, err := s.Pool.Query(ctx, `SELECT m.symbol, m.market_index, `+strings.Join(cols, ", ")+` FROM `+s.t.markets+` m
		LEFT JOIN `+s.t.funding+` f ON f.symbol = m.symbol AND f.ts > $`+strconv.Itoa(len(args))+` AND f.ts <= $1
		WHERE m.market_type = 'perp' AND m.market_filter = 'perp'
		GROUP BY m.symbol, m.market_index ORDER BY m.market_index, m.symbol`, args...)
	if err != nil {
		return nil, fmt.Errorf("read funding averages: %w", err)
	}
	defer rows.Close()
	var out []stats.FundingAverages
	for rows.Next() {
		a := stats.FundingAverages{Averages: make([]*float64, len(stats.FundingWindows))}
		dest := []any{&a.Symbol, &a.MarketIndex}
		for i := range a.Averages {
			dest = append(dest, &a.Averages[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read funding averages: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read funding averages: %w", err)
	}
	return out, nil
}

// board is how a leaderboard is read: its figure column and the predicate of its partial index.
type board struct{ column, on string }

func boardOf(b stats.Board) board {
	switch b {
	case stats.BoardVolume:
		return board{"volume", "volume > 0"}
	case stats.BoardMaker:
		return board{"maker_volume", "maker_volume > 0"}
	case stats.BoardTaker:
		return board{"taker_volume", "taker_volume > 0"}
	}
	return board{"pnl", "pnl <> 0"}
}

// Leaderboard implements stats.Store: the page is a walk of the board's index from its offset; on a
// later page the first wallet's rank is a count of the index before it; in one round trip with the
// board's size, which the fold counts.
func (s *Store) Leaderboard(ctx context.Context, q stats.LeaderboardQuery) (stats.LeaderboardPage, error) {
	bd := boardOf(q.Board)
	var page stats.LeaderboardPage
	var ahead int64
	var b pgx.Batch
	// The order is qualified: the output columns of the same names are text.
	b.Queue(`SELECT w.authority, w.maker_volume::text, w.taker_volume::text, w.volume::text, w.pnl::text FROM `+s.t.walletMonths+` w
		WHERE w.month = $1 AND w.`+bd.on+` ORDER BY w.`+bd.column+` DESC, w.authority LIMIT $2 OFFSET $3`, q.Month, q.Limit, q.Offset()).
		Query(func(rows pgx.Rows) error {
			var l stats.Leader
			_, err := pgx.ForEachRow(rows, []any{&l.Authority, &l.MakerVolume, &l.TakerVolume, &l.Volume, &l.Pnl}, func() error {
				page.Leaders = append(page.Leaders, l)
				return nil
			})
			return err
		})
	b.Queue(`SELECT coalesce((SELECT wallets FROM `+s.t.boardSizes+` WHERE month = $1 AND board = $2), 0)`, q.Month, string(q.Board)).
		QueryRow(func(row pgx.Row) error { return row.Scan(&page.Total) })
	if q.Offset() > 0 {
		// Wallets with a higher figure than the page's first: its rank is one more. The first page's
		// first has none.
		b.Queue(`SELECT count(*) FROM `+s.t.walletMonths+` t WHERE t.month = $1 AND t.`+bd.on+` AND t.`+bd.column+` > (
				SELECT `+bd.column+` FROM `+s.t.walletMonths+` WHERE month = $1 AND `+bd.on+` ORDER BY `+bd.column+` DESC, authority
				LIMIT 1 OFFSET $2)`, q.Month, q.Offset()).QueryRow(func(row pgx.Row) error {
			return row.Scan(&ahead)
		})
	}
	if err := s.Pool.SendBatch(ctx, &b).Close(); err != nil {
		return stats.LeaderboardPage{}, fmt.Errorf("read the %s leaderboard: %w", q.Board, err)
	}
	if err := stats.Rank(page.Leaders, q.Board, q.Offset(), ahead); err != nil {
		return stats.LeaderboardPage{}, err
	}
	return page, nil
}

// Standing implements stats.Store.
func (s *Store) Standing(ctx context.Context, month int64, authority string) (stats.Standing, error) {
	st := stats.Standing{Authority: authority, Month: stats.MonthLabel(month)}
	rank := func(b stats.Board) string {
		bd := boardOf(b)
		return `CASE WHEN w.` + bd.on + ` THEN 1 + (SELECT count(*) FROM ` + s.t.walletMonths + ` x WHERE x.month = $1 AND x.` + bd.on +
			` AND x.` + bd.column + ` > w.` + bd.column + `) END`
	}
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(w.maker_volume, 0)::text, coalesce(w.taker_volume, 0)::text,
			coalesce(w.volume, 0)::text, coalesce(w.pnl, 0)::text,
			`+rank(stats.BoardMaker)+`, `+rank(stats.BoardTaker)+`, `+rank(stats.BoardVolume)+`, `+rank(stats.BoardPnl)+`
		FROM (SELECT 1) one LEFT JOIN `+s.t.walletMonths+` w ON w.month = $1 AND w.authority = $2`, month, authority).
		Scan(&st.MakerVolume, &st.TakerVolume, &st.Volume, &st.Pnl, &st.Rank.Maker, &st.Rank.Taker, &st.Rank.Volume, &st.Rank.Pnl)
	if err != nil {
		return stats.Standing{}, fmt.Errorf("read the standing of %s: %w", authority, err)
	}
	return st, nil
}

// page reads a newest-first keyset page of table's records within [since, until].
func (s *Store) page(ctx context.Context, table, where string, since, until int64, after *series.Cursor, limit int) ([]series.Row, error) {
	args := []any{since, until, limit}
	sql := `SELECT ts, tx_sig, tx_sig_index, record FROM ` + table + ` WHERE ts >= $1 AND ts <= $2`
	if where != "" {
		sql += " AND " + where
	}
	if after != nil {
		args = append(args, after.Ts, after.TxSig, after.TxSigIndex)
		sql += " AND (ts, tx_sig, tx_sig_index) < ($4, $5, $6)"
	}
	sql += " ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT $3"
	rows, err := s.Pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	var out []series.Row
	var r series.Row
	var rec []byte
	_, err = pgx.ForEachRow(rows, []any{&r.Ts, &r.TxSig, &r.TxSigIndex, &rec}, func() error {
		r.Record = json.RawMessage(append([]byte(nil), rec...))
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	return out, nil
}

// Liquidations implements stats.Store.
func (s *Store) Liquidations(ctx context.Context, bankruptcies bool, since, until int64, after *series.Cursor, limit int) ([]series.Row, error) {
	where := ""
	if bankruptcies {
		where = "bankruptcy"
	}
	return s.page(ctx, s.t.liquidations, where, since, until, after, limit)
}

// Swaps implements stats.Store.
func (s *Store) Swaps(ctx context.Context, since, until int64, after *series.Cursor, limit int) ([]series.Row, error) {
	return s.page(ctx, s.t.swaps, "", since, until, after, limit)
}

// quoteValue is the SQL of a liquidation row's column in quote (1e6): as is when it is quote; a
// spot token amount over 10^decimals, times the oracle price when the record stated none. NULL when
// the spot market's decimals are not known yet.
func quoteValue(col string) string {
	return `CASE WHEN l.value_market IS NULL THEN l.` + col + `
		WHEN l.priced THEN l.` + col + ` / power(10::numeric, s.decimals)
		ELSE l.` + col + ` * s.oracle_price / power(10::numeric, s.decimals) END`
}

// LiquidationStats implements stats.Store.
func (s *Store) LiquidationStats(ctx context.Context, since ...int64) ([]stats.CountAmount, error) {
	args := []any{}
	var cols []string
	from := since[0]
	for _, t := range since {
		args = append(args, t)
		n := strconv.Itoa(len(args))
		cols = append(cols, `count(*) FILTER (WHERE ts >= $`+n+`)`, `round(coalesce(sum(v) FILTER (WHERE ts >= $`+n+`), 0))::text`)
		from = min(from, t)
	}
	args = append(args, from)
	rows, err := s.Pool.Query(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM (
			SELECT l.ts, `+quoteValue("amount")+` AS v FROM `+s.t.liquidations+` l
			LEFT JOIN `+s.t.marketStates+` s ON s.market_type = 'spot' AND s.market_index = l.value_market
			WHERE l.ts >= $`+strconv.Itoa(len(args))+` AND NOT l.bankruptcy) x`, args...)
	if err != nil {
		return nil, fmt.Errorf("read liquidation stats: %w", err)
	}
	defer rows.Close()
	out := make([]stats.CountAmount, len(since))
	if rows.Next() {
		dest := make([]any, 0, 2*len(since))
		for i := range out {
			dest = append(dest, &out[i].Count, &out[i].Amount)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("read liquidation stats: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read liquidation stats: %w", err)
	}
	return out, nil
}

// BankruptcyStats implements stats.Store.
func (s *Store) BankruptcyStats(ctx context.Context) (stats.BankruptcyStats, error) {
	var count int64
	var total, paid string
	err := s.Pool.QueryRow(ctx, `SELECT count(*), round(coalesce(sum(`+quoteValue("amount")+`), 0))::text,
			round(coalesce(sum(`+quoteValue("if_payment")+`), 0))::text
		FROM `+s.t.liquidations+` l LEFT JOIN `+s.t.marketStates+` s ON s.market_type = 'spot' AND s.market_index = l.value_market
		WHERE l.bankruptcy`).Scan(&count, &total, &paid)
	if err != nil {
		return stats.BankruptcyStats{}, fmt.Errorf("read bankruptcy stats: %w", err)
	}
	t, _ := new(big.Int).SetString(total, 10)
	p, _ := new(big.Int).SetString(paid, 10)
	loss := new(big.Int).Sub(t, p)
	if loss.Sign() < 0 {
		loss.SetInt64(0)
	}
	return stats.BankruptcyStats{TotalAmount: events.Amount(total), IfPayment: events.Amount(paid),
		SocialLoss: events.Amount(loss.String()), TotalCount: events.NewAmount(count)}, nil
}

// RateHistory implements stats.Store. Balances come from the hour's state sample, or its last
// deposit when the samples carry none.
func (s *Store) RateHistory(ctx context.Context, symbol string, kind stats.RateKind, since int64) ([]stats.RatePoint, error) {
	var sql string
	switch kind {
	case stats.RateDeposit, stats.RateBorrow:
		sql = `SELECT ts, ` + string(kind) + `_rate FROM ` + s.t.spotRates + ` WHERE symbol = $1 AND ts >= $2 AND ` +
			string(kind) + `_rate IS NOT NULL ORDER BY ts`
	default:
		col := string(kind)
		sql = `SELECT coalesce(r.ts, b.ts) AS ts, coalesce(r.` + col + `, b.` + col + `) AS v
			FROM (SELECT ts, ` + col + ` FROM ` + s.t.spotRates + ` WHERE symbol = $1 AND ts >= $2) r
			FULL JOIN (SELECT ts, ` + col + ` FROM ` + s.t.spotBalances + ` WHERE symbol = $1 AND ts >= $2) b ON b.ts = r.ts
			WHERE coalesce(r.` + col + `, b.` + col + `) IS NOT NULL ORDER BY 1`
	}
	rows, err := s.Pool.Query(ctx, sql, symbol, since)
	if err != nil {
		return nil, fmt.Errorf("read the %s rate history of %s: %w", kind, symbol, err)
	}
	out := []stats.RatePoint{}
	var p stats.RatePoint
	if _, err := pgx.ForEachRow(rows, []any{&p.Ts, &p.Value}, func() error { out = append(out, p); return nil }); err != nil {
		return nil, fmt.Errorf("read the %s rate history of %s: %w", kind, symbol, err)
	}
	return out, nil
}

// Vaults implements stats.Store.
func (s *Store) Vaults(ctx context.Context) ([]events.Vault, error) {
	rows, err := s.Pool.Query(ctx, `SELECT record FROM `+s.t.vaults+` ORDER BY vault`)
	if err != nil {
		return nil, fmt.Errorf("read vaults: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[events.Vault]) // pgx decodes the json column
	if err != nil {
		return nil, fmt.Errorf("read vaults: %w", err)
	}
	return out, nil
}

// InsuranceFunds implements stats.Store: each spot market's newest fund movement and newest stake
// (whichever is later gives the vault and the shares), its revenue over 24 hours, 7 and 30 days and
// its ten newest movements.
func (s *Store) InsuranceFunds(ctx context.Context, now int64) ([]stats.InsuranceFund, error) {
	day := int64(24 * 3600)
	rows, err := s.Pool.Query(ctx, `SELECT m.symbol, m.market_index,
			f.ts, f.slot, f.vault_after::text, f.total_shares::text,
			k.ts, k.slot, k.vault_after::text, k.total_shares::text, k.user_shares::text,
			coalesce(r.d1, 0)::text, coalesce(r.d7, 0)::text, coalesce(r.d30, 0)::text,
			coalesce(h.flows, '[]')
		FROM `+s.t.markets+` m
		LEFT JOIN LATERAL (SELECT ts, slot, vault_after, total_shares FROM `+s.t.insuranceFund+`
			WHERE spot_market_index = m.market_index ORDER BY ts DESC, slot DESC LIMIT 1) f ON true
		LEFT JOIN LATERAL (SELECT ts, slot, vault_after, total_shares, user_shares FROM `+s.t.ifStakes+`
			WHERE market_index = m.market_index ORDER BY ts DESC, slot DESC LIMIT 1) k ON true
		LEFT JOIN LATERAL (SELECT sum(amount) FILTER (WHERE ts > $2) AS d1, sum(amount) FILTER (WHERE ts > $3) AS d7,
				sum(amount) AS d30
			FROM `+s.t.insuranceFund+` WHERE spot_market_index = m.market_index AND ts > $4 AND ts <= $1) r ON true
		LEFT JOIN LATERAL (SELECT json_agg(record ORDER BY ts DESC, slot DESC, tx_sig DESC) AS flows FROM (
				SELECT record, ts, slot, tx_sig FROM `+s.t.insuranceFund+` WHERE spot_market_index = m.market_index
				ORDER BY ts DESC, slot DESC, tx_sig DESC LIMIT 10) x) h ON true
		WHERE m.market_type = 'spot' AND (f.ts IS NOT NULL OR k.ts IS NOT NULL)
		ORDER BY m.market_index`, now, now-day, now-7*day, now-30*day)
	if err != nil {
		return nil, fmt.Errorf("read insurance funds: %w", err)
	}
	defer rows.Close()
	var out []stats.InsuranceFund
	for rows.Next() {
		var f stats.InsuranceFund
		var fTs, fSlot, kTs, kSlot *int64
		var fVault, fShares, kVault, kShares, kUser *string
		var d1, d7, d30 string
		var flows []byte
		if err := rows.Scan(&f.Symbol, &f.MarketIndex, &fTs, &fSlot, &fVault, &fShares, &kTs, &kSlot, &kVault, &kShares, &kUser,
			&d1, &d7, &d30, &flows); err != nil {
			return nil, fmt.Errorf("read insurance funds: %w", err)
		}
		// The later of the two sources states the vault and the shares.
		if fTs != nil && (kTs == nil || *fTs > *kTs || *fTs == *kTs && *fSlot >= *kSlot) {
			f.Ts, f.VaultBalance, f.TotalShares = *fTs, events.Amount(*fVault), events.Amount(*fShares)
		} else {
			f.Ts, f.VaultBalance, f.TotalShares = *kTs, events.Amount(*kVault), events.Amount(*kShares)
		}
		if kUser != nil {
			u := events.Amount(*kUser)
			f.UserShares = &u
		}
		f.Revenue = map[string]events.Amount{"24h": events.Amount(d1), "7d": events.Amount(d7), "30d": events.Amount(d30)}
		f.Apy = apy(d30, string(f.VaultBalance))
		if err := json.Unmarshal(flows, &f.RecentFlows); err != nil {
			return nil, fmt.Errorf("stored insurance fund records: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read insurance funds: %w", err)
	}
	return out, nil
}

// apy is 30 days of revenue over the vault, a year of them, in percent with two decimals; nil for an
// empty vault.
func apy(revenue30d, vault string) *string {
	r, ok1 := new(big.Int).SetString(revenue30d, 10)
	v, ok2 := new(big.Int).SetString(vault, 10)
	if !ok1 || !ok2 || v.Sign() <= 0 {
		return nil
	}
	num := new(big.Int).Mul(r, big.NewInt(365*100))
	den := new(big.Int).Mul(v, big.NewInt(30))
	out := new(big.Rat).SetFrac(num, den).FloatString(2)
	return &out
}

// Params implements stats.Store.
func (s *Store) Params(ctx context.Context) (int64, json.RawMessage, error) {
	var ts int64
	var params []byte
	err := s.Pool.QueryRow(ctx, `SELECT ts, params FROM `+s.t.params+` WHERE id = 1`).Scan(&ts, &params)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, fault.Errorf(fault.NotFound, "no parameters have been published yet")
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read parameters: %w", err)
	}
	return ts, params, nil
}

// Published implements stats.Store.
func (s *Store) Published(ctx context.Context, topic string) ([]json.RawMessage, int64, error) {
	channel, err := edgeChannel(topic)
	if err != nil {
		return nil, 0, err
	}
	// One snapshot: the publications and the channel's number move in one transaction (Publish).
	tx, err := s.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, 0, fmt.Errorf("read the last %s publications: %w", topic, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT value FROM `+s.t.edgePublished+` WHERE topic = $1 ORDER BY symbol`, topic)
	if err != nil {
		return nil, 0, fmt.Errorf("read the last %s publications: %w", topic, err)
	}
	out := []json.RawMessage{}
	var v []byte
	if _, err := pgx.ForEachRow(rows, []any{&v}, func() error {
		out = append(out, json.RawMessage(append([]byte(nil), v...)))
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("read the last %s publications: %w", topic, err)
	}
	seqs, err := outbox.Seqs(ctx, tx, s.Schema, channel)
	if err != nil {
		return nil, 0, err
	}
	return out, seqs[channel], nil
}
