package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/market"
)

// Every transaction of the ingest that changes candles notifies the schema's candle channel with the
// range of fill times it changed, per market (notifyChanges). Postgres delivers a notification when,
// and only when, its transaction commits, to every listening replica at once, whichever partitions
// it ingests and however old the fills (edge.candles carries only recent changes, and carries
// candles rather than the buckets they are made of). So each replica's Hot is current within a read
// of the commit, before the outbox has even published the change to the WebSocket edge.

// candleChannel is the schema's notification channel of candle changes.
func candleChannel(schema string) string { return schema + "_candles" }

// maxPayload keeps a notification under Postgres' 8000-byte limit.
const maxPayload = 7000

// changeRange is the span of fill times a transaction folded into a market's candles.
type changeRange struct{ lo, hi int64 }

// queueNotify adds to b the notifications of one transaction's candle changes (symbol: the fill times
// changed) and returns where the transaction's id will be once b has run. A notification reads
// "<xid>\n<lo> <hi> <symbol>\n...": the id lets this process match its own transactions (Hot.Pending)
// to their notifications.
func queueNotify(b *pgx.Batch, schema string, changes map[string]changeRange) *int64 {
	xid := new(int64)
	var payloads []string
	var sb strings.Builder
	for sym, r := range changes {
		line := strconv.FormatInt(r.lo, 10) + " " + strconv.FormatInt(r.hi, 10) + " " + sym + "\n"
		if sb.Len()+len(line) > maxPayload {
			payloads = append(payloads, sb.String())
			sb.Reset()
		}
		sb.WriteString(line)
	}
	if sb.Len() > 0 {
		payloads = append(payloads, sb.String())
	}
	for _, p := range payloads {
		b.Queue(`SELECT txid_current(), pg_notify($1, txid_current()::text || E'\n' || $2)`, candleChannel(schema), p).
			QueryRow(func(row pgx.Row) error {
				var discard string
				return row.Scan(xid, &discard)
			})
	}
	return xid
}

// parseNotification reads a candle-change notification: its transaction and the ranges by market.
func parseNotification(payload string) (xid int64, changes map[string]changeRange, err error) {
	head, body, _ := strings.Cut(payload, "\n")
	if xid, err = strconv.ParseInt(head, 10, 64); err != nil {
		return 0, nil, fmt.Errorf("candle notification %q: %w", payload, err)
	}
	changes = map[string]changeRange{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		// The symbol last: it is the one field that could hold a space.
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 {
			return 0, nil, fmt.Errorf("candle notification line %q", line)
		}
		lo, err1 := strconv.ParseInt(f[0], 10, 64)
		hi, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, nil, fmt.Errorf("candle notification line %q", line)
		}
		changes[f[2]] = changeRange{lo, hi}
	}
	return xid, changes, nil
}

// merge widens the ranges of into with those of from.
func merge(into, from map[string]changeRange) {
	for sym, r := range from {
		if have, ok := into[sym]; ok {
			r = changeRange{min(have.lo, r.lo), max(have.hi, r.hi)}
		}
		into[sym] = r
	}
}

// Follower keeps a Hot current: it listens for candle changes, loads every market's hot range, then
// reads back each committed change. Run it on every replica (a kit job).
type Follower struct {
	pool   *pgxpool.Pool
	schema string
	hot    *market.Hot
	logger *slog.Logger
	// Loaded is called with the time a full load took (the warm-up, or a reload after the listening
	// connection was lost); nil: nothing.
	Loaded func(time.Duration)
	// Trimmed is called after each trim of what fell out of the hot range; nil: nothing.
	Trimmed func()
}

// NewFollower keeps hot current from schema through pool.
func NewFollower(pool *pgxpool.Pool, schema string, hot *market.Hot, logger *slog.Logger) *Follower {
	return &Follower{pool: pool, schema: schema, hot: hot, logger: logger}
}

// followTick is how often the follower trims what fell out of the hot range and checks transactions
// of this process that changed candles but were not notified: rolled back, most likely.
const followTick = 250 * time.Millisecond

// Run follows until ctx ends. A lost connection or a failed read makes Hot answer nothing (the store
// answers everything) until the follower has listened and loaded again.
func (f *Follower) Run(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := f.follow(ctx)
		f.hot.SetReady(false)
		if ctx.Err() != nil {
			return nil
		}
		f.logger.Warn("hot candles: following candle changes failed; the store answers until they are loaded again", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (f *Follower) follow(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, f.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{candleChannel(f.schema)}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	lctx, stop := context.WithCancel(ctx)
	notes, lost := make(chan *pgconn.Notification, 4096), make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(lctx)
			if err != nil {
				lost <- err
				return
			}
			select {
			case notes <- n:
			case <-lctx.Done():
				return
			}
		}
	}()
	defer func() { stop(); <-done }()

	// Listening before the load: a change the load's reads miss is committed after LISTEN, so it is
	// notified and read back below.
	t0 := time.Now()
	if err := f.loadAll(ctx); err != nil {
		return err
	}
	if f.Loaded != nil {
		f.Loaded(time.Since(t0))
	}
	f.hot.SetReady(true)
	tick := time.NewTicker(followTick)
	defer tick.Stop()
	lastTrim := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lost:
			return fmt.Errorf("wait for notifications: %w", err)
		case n := <-notes:
			// Everything already notified is read back together: under a burst of commits the reads
			// cost one round trip per burst, not one per commit.
			changes, xids := map[string]changeRange{}, []int64{}
			for more := true; more; {
				xid, c, err := parseNotification(n.Payload)
				if err != nil {
					return err
				}
				merge(changes, c)
				xids = append(xids, xid)
				select {
				case n = <-notes:
				default:
					more = false
				}
			}
			if err := f.readBack(ctx, changes); err != nil {
				return err
			}
			f.hot.Resolve(xids...)
		case <-tick.C:
			if time.Since(lastTrim) >= time.Minute {
				f.hot.Trim()
				lastTrim = time.Now()
				if f.Trimmed != nil {
					f.Trimmed()
				}
			}
			if err := f.settle(ctx); err != nil {
				return err
			}
		}
	}
}

// loadAll loads the hot range of every market of the catalogue, from scratch.
func (f *Follower) loadAll(ctx context.Context) error {
	f.hot.Reset()
	rows, err := f.pool.Query(ctx, `SELECT symbol FROM `+pg.Table(f.schema, "markets")+` ORDER BY symbol`)
	if err != nil {
		return fmt.Errorf("list markets: %w", err)
	}
	symbols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list markets: %w", err)
	}
	// A few markets at once: one's rows cross the wire and are scanned while Postgres reads another's.
	work := make(chan string)
	errs := make(chan error, loadConcurrency)
	var wg sync.WaitGroup
	for range loadConcurrency {
		wg.Go(func() {
			for sym := range work {
				if err := f.load(ctx, sym); err != nil {
					errs <- err
					return
				}
			}
		})
	}
feed:
	for _, sym := range symbols {
		select {
		case work <- sym:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// loadConcurrency is how many markets a full load reads at once.
const loadConcurrency = 4

// load loads symbol's hot range at every resolution in one round trip.
func (f *Follower) load(ctx context.Context, symbol string) error {
	var b pgx.Batch
	type part struct {
		res   market.Resolution
		start int64
	}
	var parts []part
	for _, res := range market.Resolutions() {
		start, ok := f.hot.Start(res)
		if !ok {
			continue
		}
		parts = append(parts, part{res, start})
		queueHotCandles(&b, f.schema, symbol, res, start, math.MaxInt64)
	}
	br := f.pool.SendBatch(ctx, &b)
	defer br.Close()
	for _, p := range parts {
		stored, before, err := readHotCandles(br)
		if err != nil {
			return fmt.Errorf("load %s: %w", symbol, err)
		}
		f.hot.Load(symbol, p.res, p.start, stored, before)
	}
	return br.Close()
}

// readBack reads the buckets the changes touched, at every resolution, in one round trip, and
// applies them; a market not loaded yet (its first fills) is loaded whole.
func (f *Follower) readBack(ctx context.Context, changes map[string]changeRange) error {
	type part struct {
		symbol string
		res    market.Resolution
		lo, hi int64
	}
	var parts []part
	var b pgx.Batch
	for sym, r := range changes {
		if !f.hot.Has(sym) {
			if err := f.load(ctx, sym); err != nil {
				return err
			}
			continue
		}
		for _, res := range market.Resolutions() {
			start, ok := f.hot.SeriesStart(sym, res)
			if !ok {
				continue
			}
			// A change before the range can still move the close its first bucket opens at: the
			// read from start returns that bucket as the one before.
			lo, hi := max(res.Floor(r.lo), start), res.Floor(r.hi)
			parts = append(parts, part{sym, res, lo, hi})
			queueHotCandles(&b, f.schema, sym, res, lo, hi)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	br := f.pool.SendBatch(ctx, &b)
	defer br.Close()
	for _, p := range parts {
		stored, before, err := readHotCandles(br)
		if err != nil {
			return fmt.Errorf("read back %s %s: %w", p.symbol, p.res, err)
		}
		f.hot.Apply(p.symbol, p.res, p.lo, p.hi, stored, before)
	}
	return br.Close()
}

// everything is a change range over every fill time there can be (the years 1970 to 2514).
var everything = changeRange{0, 1 << 34}

// settleAge is how long a transaction of this process that changed candles may go unnotified before
// the follower asks Postgres what became of it.
const settleAge = 500 * time.Millisecond

// settle resolves the transactions of this process that changed candles and have not been notified
// for a while: one rolled back (a failed batch, retried in a new transaction) never will be; one that
// committed while the notification was on its way is read back whole, to be sure.
func (f *Follower) settle(ctx context.Context) error {
	old := f.hot.Unresolved(settleAge)
	if len(old) == 0 {
		return nil
	}
	xids := make([]int64, 0, len(old))
	for x := range old {
		xids = append(xids, x)
	}
	rows, err := f.pool.Query(ctx, `SELECT x, coalesce(txid_status(x), 'unknown') FROM unnest($1::bigint[]) AS x`, xids)
	if err != nil {
		return fmt.Errorf("transaction status: %w", err)
	}
	status := map[int64]string{}
	var x int64
	var st string
	if _, err := pgx.ForEachRow(rows, []any{&x, &st}, func() error { status[x] = st; return nil }); err != nil {
		return fmt.Errorf("transaction status: %w", err)
	}
	var settled []int64
	changes := map[string]changeRange{}
	for x, st := range status {
		switch st {
		case "in progress":
			continue
		case "committed":
			for _, sym := range old[x] {
				changes[sym] = everything
			}
		}
		settled = append(settled, x)
	}
	if err := f.readBack(ctx, changes); err != nil {
		return err
	}
	f.hot.Resolve(settled...)
	return nil
}
