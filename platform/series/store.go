package series

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/pg"
)

// Cursor is the keyset position of a record: every series is ordered by (ts, txSig, txSigIndex).
type Cursor struct {
	Ts         int64  `json:"t"`
	TxSig      string `json:"s"`
	TxSigIndex int    `json:"i"`
}

// Row is one stored record: its position and its API JSON, kept verbatim so reads never re-encode.
type Row struct {
	Cursor
	Record json.RawMessage
}

// compiled is a declared series with what serving it needs computed once.
type compiled struct {
	Series
	table   string   // schema.table, quoted for SQL
	name    string   // schema.table as pg.Partitions takes it
	vars    []string // the path variables, in order; their values are $1.. of every read
	wheres  []string // Where with the variables bound
	entity  string   // the first segment of Path: "market", "user"
	cols    string   // the columns a read selects: the key and the records' column
	withDay bool     // the dated route is a day's, not a month's
}

func compile(s Series, schema string) (*compiled, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	c := &compiled{Series: s, table: pgx.Identifier{schema, s.Table}.Sanitize(), name: schema + "." + s.Table, vars: vars(s.Path)}
	for _, w := range s.Where {
		c.wheres = append(c.wheres, bind(w, c.vars))
	}
	c.entity, _, _ = strings.Cut(strings.TrimPrefix(s.Path, "/"), "/")
	c.cols = "ts, tx_sig, tx_sig_index, " + cmp.Or(s.Column, "record")
	c.withDay = strings.HasSuffix(s.Dated, "/{day}")
	return c, nil
}

// store reads the series of one schema.
type store struct {
	pool *pgxpool.Pool

	sqlMu sync.RWMutex
	sql   map[rollingKey][]string // see rollingSQL
}

func newStore(pool *pgxpool.Pool) *store {
	return &store{pool: pool, sql: map[rollingKey][]string{}}
}

// rolling returns the records of c's scope with since <= ts <= until, strictly before after when set,
// newest first, at most limit. It reads the month partitions newest first and stops as soon as the
// page is full, which for a first page is almost always in the current month.
func (s *store) rolling(ctx context.Context, c *compiled, scope []any, since, until int64, after *Cursor, limit int) ([]Row, error) {
	if after != nil {
		until = min(until, after.Ts)
	}
	out := make([]Row, 0, limit)
	if since > until {
		return out, nil // a cursor older than the window
	}
	k := rollingKey{series: c, after: after != nil}
	k.from, _ = pg.MonthRange(time.Unix(since, 0))
	k.to, _ = pg.MonthRange(time.Unix(until, 0))
	stmts, err := s.rollingSQL(k)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, len(scope)+5)
	args = append(args, scope...)
	for _, sql := range stmts {
		args = append(args[:len(scope)], since, limit-len(out))
		if after != nil {
			args = append(args, after.Ts, after.TxSig, after.TxSigIndex)
		}
		rows, err := s.rows(ctx, out, sql, args...)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", c.Name, err)
		}
		out = rows
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// rollingKey identifies the statements of a rolling read: its series, the first seconds of the
// oldest and the newest month it spans, and whether it continues after a cursor.
type rollingKey struct {
	series   *compiled
	from, to int64
	after    bool
}

// maxRollingSQL bounds the statement cache. Keys change only with the months (a handful per series
// at any time), so it is never reached in practice; it keeps a bug from becoming a leak.
const maxRollingSQL = 1024

// rollingSQL returns the statements of a rolling read, one per month partition, newest first. They
// are built once per key and kept: formatting them (partition names, quoting, fmt) on every request
// would redo work for text that only changes when the month does.
func (s *store) rollingSQL(k rollingKey) ([]string, error) {
	s.sqlMu.RLock()
	stmts, ok := s.sql[k]
	s.sqlMu.RUnlock()
	if ok {
		return stmts, nil
	}
	c := k.series
	n := len(c.vars)
	since, limit := fmt.Sprintf("$%d", n+1), fmt.Sprintf("$%d", n+2)
	after := ""
	if k.after {
		after = fmt.Sprintf(" AND (ts, tx_sig, tx_sig_index) < ($%d, $%d, $%d)", n+3, n+4, n+5)
	}
	parts, err := pg.Partitions(c.name, k.from, k.to)
	if err != nil {
		return nil, err
	}
	stmts = make([]string, len(parts))
	for p, part := range parts {
		branches := make([]string, len(c.wheres))
		for i, w := range c.wheres {
			branches[i] = fmt.Sprintf("(SELECT %s FROM %s WHERE %s AND ts >= %s%s ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT %s)",
				c.cols, part, w, since, after, limit)
		}
		stmts[p] = branches[0]
		if len(branches) > 1 {
			stmts[p] = strings.Join(branches, " UNION ALL ") + " ORDER BY ts DESC, tx_sig DESC, tx_sig_index DESC LIMIT " + limit
		}
	}
	s.sqlMu.Lock()
	if len(s.sql) >= maxRollingSQL {
		clear(s.sql)
	}
	s.sql[k] = stmts
	s.sqlMu.Unlock()
	return stmts, nil
}

// dated returns one page of c's scope over [start, end), oldest first, and the number of records in
// the whole range. A dated range lies within one month, so within one partition.
func (s *store) dated(ctx context.Context, c *compiled, scope []any, start, end int64, offset, limit int) ([]Row, int, error) {
	parts, err := pg.Partitions(c.name, start, end-1)
	if err != nil {
		return nil, 0, err
	}
	if len(parts) != 1 {
		return nil, 0, fmt.Errorf("dated range [%d, %d) spans %d months", start, end, len(parts))
	}
	n := len(scope)
	branches := make([]string, len(c.wheres))
	for i, w := range c.wheres {
		branches[i] = fmt.Sprintf("SELECT %s FROM %s WHERE %s AND ts >= $%d AND ts < $%d", c.cols, parts[0], w, n+1, n+2)
	}
	from := "(" + strings.Join(branches, " UNION ALL ") + ") u"
	args := append(append(make([]any, 0, n+4), scope...), start, end)
	var total int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+from, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count %s: %w", c.Name, err)
	}
	if total == 0 || offset >= total {
		return []Row{}, total, nil
	}
	sql := fmt.Sprintf("SELECT * FROM %s ORDER BY ts, tx_sig, tx_sig_index LIMIT $%d OFFSET $%d", from, n+3, n+4)
	rows, err := s.rows(ctx, make([]Row, 0, limit), sql, append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", c.Name, err)
	}
	return rows, total, nil
}

// rows appends the rows sql returns to out, whose spare capacity is the number of rows the query
// may return at most (its LIMIT). The records are copied out of pgx's read buffer into memory lent
// for the request (see recordArena), so they are valid until its response has been written.
func (s *store) rows(ctx context.Context, out []Row, sql string, args ...any) ([]Row, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query rows: %w", err)
	}
	defer rows.Close()
	// One row and one list of destinations for every row: taking their addresses moves them to the
	// heap, once per read rather than once per row.
	var r Row
	rec := arenaRecord{arena: &recordArena{ctx: ctx}, dst: &r.Record}
	dest := []any{&r.Ts, &r.TxSig, &r.TxSigIndex, &rec}
	for rows.Next() {
		rec.more = cap(out) - len(out)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("scan row: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return out, nil
}

// recordArena copies the records of one read into a few chunks of httpapi.Scratch memory, lent for
// the request and reused by later ones once its response is written. Every page a read route
// answers is such a copy (a page of fills is 20 records of a kilobyte or so), and allocating them one
// by one would give the garbage collector work for every record of every page. Outside a request Scratch allocates, so rows read
// elsewhere (tests, tools) own their memory.
type recordArena struct {
	ctx context.Context
	buf []byte
}

// add copies rec into the arena and returns the copy, capped so that appending to it cannot
// overwrite its neighbour. more is how many records, this one included, the read may still return:
// a new chunk is sized for them on the assumption that they resemble rec (a series' records do).
func (a *recordArena) add(rec []byte, more int) json.RawMessage {
	if rec == nil {
		return nil
	}
	if cap(a.buf)-len(a.buf) < len(rec) {
		n := len(rec) * max(more, 1)
		a.buf = httpapi.Scratch(a.ctx, n+n/8)
	}
	start := len(a.buf)
	a.buf = append(a.buf, rec...)
	return a.buf[start:len(a.buf):len(a.buf)]
}

// arenaRecord scans a json column into *dst through an arena. It is a pgtype.BytesScanner: pgx hands
// it the column's bytes in its read buffer, valid only until the next row, and they are copied once.
type arenaRecord struct {
	arena *recordArena
	more  int
	dst   *json.RawMessage
}

// ScanBytes implements pgtype.BytesScanner.
func (a *arenaRecord) ScanBytes(src []byte) error {
	*a.dst = a.arena.add(src, a.more)
	return nil
}
