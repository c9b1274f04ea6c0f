package series

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// maxExportTs bounds from and to (9999-12-31T23:59:59Z) so that no bound is past any record.
const maxExportTs = 253402300799

// MaxExportAccounts bounds the accounts of one export: a wallet's subaccounts are a handful, and
// each is a value of the query's array.
const MaxExportAccounts = 100

// ExportConfig tunes a service's export streams.
type ExportConfig struct {
	// Concurrency is how many exports may stream at once, each on a database connection of its own
	// (TIDEMARK_EXPORT_CONCURRENCY, default 4); further ones wait for a slot.
	Concurrency int
}

// DefaultExportConfig is the default, stated once: RegisterEnv's, and what WithDefaults gives a
// zero field.
func DefaultExportConfig() ExportConfig { return ExportConfig{Concurrency: 4} }

// RegisterEnv reads TIDEMARK_EXPORT_CONCURRENCY.
func (c *ExportConfig) RegisterEnv(e *app.Env) {
	c.Concurrency = e.Int("EXPORT_CONCURRENCY", DefaultExportConfig().Concurrency)
}

// WithDefaults is c with a zero concurrency set to its default.
func (c ExportConfig) WithDefaults() ExportConfig {
	c.Concurrency = cmp.Or(c.Concurrency, DefaultExportConfig().Concurrency)
	return c
}

// Validate reports a concurrency out of range, naming its variable.
func (c ExportConfig) Validate() error {
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return fmt.Errorf("%sEXPORT_CONCURRENCY must be 1..64, got %d", app.EnvPrefix, c.Concurrency)
	}
	return nil
}

// Exports registers the export route on api, which belongs on the service's internal port:
//
//	GET /internal/exports/{fileType}?from=..&to=..&accounts=a,b[&market=SYMBOL]
//
// from and to are unix seconds, both required and inclusive, to - from at most 366 days. accounts
// are the job's account keys (base58, 1..MaxExportAccounts, comma-separated): the series' records of
// those accounts are exported, or, for records that belong to markets (funding rates), they are
// accepted and not a filter. market restricts the export to one market, and is required where the
// series says so. The answer is 200 text/csv: the record type's header row and one row per record,
// oldest first by (ts, tx_sig, tx_sig_index), with the columns and bytes of the dated CSV answers,
// then the trailer Tidemark-Record-Count. If reading fails after the answer has started the connection
// is aborted, so a client never sees a clean short file. A file type no series exports is 404; bad
// parameters are 400; an unknown market is 404.
func (set *Set) Exports(api *httpapi.API) {
	byType := map[string]*compiled{}
	for _, c := range set.list {
		if c.Export != nil {
			byType[c.Export.FileType] = c
		}
	}
	api.Handle(http.MethodGet, exportstream.PathPrefix+"{fileType}", func(r *http.Request) (any, error) {
		name := httpapi.PathVar(r, "fileType")
		c, ok := byType[name]
		if !ok {
			return nil, fault.Errorf(fault.NotFound, "export type %s is not served here", name)
		}
		q, err := readExportQuery(r, c)
		if err != nil {
			return nil, err
		}
		scope := "all"
		if q.market != "" {
			scope = q.market
		}
		return &exportStream{
			exporter: set.exporter,
			logger:   set.logger,
			series:   c,
			filename: httpapi.CSVFilename("export", scope, name, strconv.FormatInt(q.from, 10)+"-"+strconv.FormatInt(q.to, 10)),
			query:    q,
		}, nil
	}, httpapi.CacheControl("no-store"))
}

// exportQuery is what one export reads.
type exportQuery struct {
	from, to int64
	accounts []string // nil when the series' records belong to no account
	market   string   // "" for every market
}

// readExportQuery reads and checks the parameters of an export of c.
func readExportQuery(r *http.Request, c *compiled) (exportQuery, error) {
	var q exportQuery
	for _, name := range []string{"from", "to"} {
		if r.URL.Query().Get(name) == "" {
			return q, fault.Errorf(fault.Invalid, "%s is required (unix seconds)", name)
		}
	}
	var err error
	if q.from, err = httpapi.QueryInt(r, "from", 0, 0, maxExportTs); err != nil {
		return q, err
	}
	if q.to, err = httpapi.QueryInt(r, "to", 0, 0, maxExportTs); err != nil {
		return q, err
	}
	if q.from > q.to {
		return q, fault.Errorf(fault.Invalid, "from must not be after to")
	}
	if q.to-q.from > exportstream.MaxRangeSeconds {
		return q, fault.Errorf(fault.Invalid, "the range from..to may span at most 366 days")
	}
	var accounts []string
	for _, a := range strings.Split(r.URL.Query().Get("accounts"), ",") {
		if a = strings.TrimSpace(a); a == "" {
			continue
		}
		if !events.ValidPublicKey(a) {
			return q, fault.Errorf(fault.Invalid, "accounts: %q is not an account key (base58, 32 bytes)", a)
		}
		accounts = append(accounts, a)
	}
	switch {
	case len(accounts) == 0:
		return q, fault.Errorf(fault.Invalid, "accounts is required: the job's account keys, comma-separated")
	case len(accounts) > MaxExportAccounts:
		return q, fault.Errorf(fault.Invalid, "accounts may name at most %d accounts, got %d", MaxExportAccounts, len(accounts))
	}
	if c.Export.Accounts != "" {
		q.accounts = accounts
	}
	q.market = r.URL.Query().Get("market")
	switch {
	case q.market == "" && c.Export.RequireMarket:
		return q, fault.Errorf(fault.Invalid, "market is required: %s are exported one market at a time", c.Export.FileType)
	case q.market != "" && c.Export.Market == "":
		return q, fault.Errorf(fault.Invalid, "market does not apply to %s", c.Export.FileType)
	case q.market != "" && c.Export.CheckMarket != nil:
		if err := c.Export.CheckMarket(r.Context(), q.market); err != nil {
			return q, err
		}
	}
	return q, nil
}

// exporter streams export ranges. Each export runs on a connection of its own, opened with the
// pool's settings but outside it: an export holds its connection for as long as the client reads
// (minutes for a year of fills), and pool connections are for the API's short queries. At most
// Concurrency exports run at once; further ones wait for a slot.
type exporter struct {
	conn  *pgx.ConnConfig
	slots chan struct{}
}

func newExporter(pool *pgxpool.Pool, cfg ExportConfig) *exporter {
	conn := pool.Config().ConnConfig
	if conn.RuntimeParams == nil {
		conn.RuntimeParams = map[string]string{}
	}
	// An export connection runs one statement, so:
	//   - plan_cache_mode=force_custom_plan: plan it for the actual range, pruning partitions while
	//     planning (the pool's generic plans pay off only for statements executed many times).
	//   - enable_sort=off: for a market whose fills are a good share of the table the planner
	//     prefers scanning whole partitions and sorting them, which is cheaper on paper but holds the
	//     first row back until everything is sorted, spilling gigabytes to disk for a year of fills.
	//     The indexes give the order; the sort is the plan of last resort, never the cheaper one.
	//   - QueryExecModeExec: no separate round trip to prepare a statement used once.
	conn.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	conn.RuntimeParams["enable_sort"] = "off"
	conn.DefaultQueryExecMode = pgx.QueryExecModeExec
	return &exporter{conn: conn, slots: make(chan struct{}, max(cfg.Concurrency, 1))}
}

// query is the statement of q over c and its arguments.
func (e *exporter) query(c *compiled, q exportQuery) (string, []any) {
	names, args := []string{"from", "to"}, []any{q.from, q.to}
	conds := []string{"ts >= @from", "ts <= @to"}
	if c.Export.Where != "" {
		conds = append(conds, "("+c.Export.Where+")")
	}
	if q.accounts != nil {
		names, args = append(names, "accounts"), append(args, q.accounts)
		conds = append(conds, "("+c.Export.Accounts+")")
	}
	if q.market != "" {
		names, args = append(names, "market"), append(args, q.market)
		conds = append(conds, "("+c.Export.Market+")")
	}
	order := c.Export.Order
	if order == "" {
		order = "ts, tx_sig, tx_sig_index"
	}
	sql := "SELECT " + cmp.Or(c.Column, "record") + " FROM " + c.table + " WHERE " + strings.Join(conds, " AND ") + " ORDER BY " + order
	return bind(sql, names), args
}

// export calls emit with the stored JSON of every record q selects, oldest first. The records come
// from one SELECT on the partitioned parent, in one implicit transaction (one snapshot). Monthly
// partitions are ranges of ts, so the planner appends the partitions in order, each read in key order
// through an index, and prunes the months outside the range: no sort, and the first row leaves at
// once (see newExporter for the settings that keep it so). pgx reads the result as the server sends
// it, one message at a time, and TCP flow control keeps the server from running ahead of the client,
// so memory stays flat without a cursor's round trips. record is only valid during the call.
func (e *exporter) export(ctx context.Context, c *compiled, q exportQuery, emit func(record []byte) error) error {
	sql, args := e.query(c, q)
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("wait for an export slot: %w", ctx.Err())
	}
	defer func() { <-e.slots }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, e.conn)
	if err != nil {
		return fmt.Errorf("connect for export: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// Text results: a json value's text is its stored bytes, handed to emit as they arrive.
	rows, err := conn.Query(ctx, sql, append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)...)
	if err != nil {
		return fmt.Errorf("export %s: %w", c.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := emit(rows.RawValues()[0]); err != nil {
			// Closing the rows would otherwise read every remaining row; cancelling drops the
			// connection, which is this export's alone.
			cancel()
			return fmt.Errorf("export %s: %w", c.Name, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export %s: %w", c.Name, err)
	}
	return nil
}

// exportStream writes one export as it is read.
type exportStream struct {
	exporter *exporter
	logger   *slog.Logger
	series   *compiled
	filename string
	query    exportQuery
}

// Respond implements httpapi.Responder. Nothing is written until the CSVWriter's buffer first fills
// (or the read ends), so that a query that fails at once is still answered as an error.
func (s *exportStream) Respond(w http.ResponseWriter, r *http.Request) error {
	declareTrailer := func(h http.Header) { h.Set("Trailer", exportstream.RecordCountTrailer) }
	rows, started, err := writeCSV(w, s.filename, s.series.Record, declareTrailer, func(emit func([]byte) error) error {
		return s.exporter.export(r.Context(), s.series, s.query, emit)
	})
	if err == nil {
		w.Header().Set(exportstream.RecordCountTrailer, strconv.FormatInt(rows, 10))
		return nil
	}
	if !started {
		return err // answered by the API's wrapper, which logs it
	}
	level := slog.LevelError
	if r.Context().Err() != nil || errors.Is(err, context.Canceled) {
		level = slog.LevelWarn // the client went away
	}
	s.logger.LogAttrs(r.Context(), level, "export cut short",
		slog.String("fileType", s.series.Export.FileType), slog.String("market", s.query.market),
		slog.Int64("from", s.query.from), slog.Int64("to", s.query.to),
		slog.Int64("rows", rows), slog.String("error", err.Error()))
	// A response that ended normally would look complete to a client that ignores the trailer: abort
	// the connection instead, so the body ends in an error.
	panic(http.ErrAbortHandler)
}

// Explain returns the JSON plan of the statement exporting fileType over from..to for accounts and
// market, planned on an export connection: tests check that exports stream in index order.
func (set *Set) Explain(ctx context.Context, fileType string, from, to int64, accounts []string, market string) ([]byte, error) {
	for _, c := range set.list {
		if c.Export == nil || c.Export.FileType != fileType {
			continue
		}
		q := exportQuery{from: from, to: to, market: market}
		if c.Export.Accounts != "" {
			q.accounts = accounts
		}
		sql, args := set.exporter.query(c, q)
		conn, err := pgx.ConnectConfig(ctx, set.exporter.conn)
		if err != nil {
			return nil, err
		}
		defer conn.Close(ctx)
		var plan []byte
		if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&plan); err != nil {
			return nil, fmt.Errorf("explain %s: %w", sql, err)
		}
		return plan, nil
	}
	return nil, fmt.Errorf("no series exports %s", fileType)
}
