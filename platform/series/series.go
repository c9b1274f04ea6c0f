// Package series serves the lists of event tables: one declaration per series (its table, the
// predicate that scopes it, its routes, its record's CSV layout, its export file type) gives the rolling
// route (newest first, the last 31 days, a page token), the dated route (a day or a month, 20 per page,
// JSON or CSV) and the internal export stream with its record-count trailer. The kit registers every
// series of a service; a service only declares them.
//
// An event table has the columns ts (unix seconds), tx_sig, tx_sig_index and record (the API's JSON of
// the record, as json: served as stored, never encoded again), is range-partitioned by month on ts
// (pg.EnsureMonthlyPartitions names the partitions) and has, for every predicate its series read, an
// index ending in (ts, tx_sig, tx_sig_index): pages are keyset scans of that index.
package series

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Series is one list the API serves from an event table.
type Series struct {
	// Name names the series in CSV file names and page-token scopes ("trades").
	Name string
	// Table is the event table in the service's schema ("fills").
	Table string
	// Path is the rolling route, e.g. "/market/{symbol}/trades": newest first, the last 31 days,
	// paged with a token. Its path variables are the series' scope.
	Path string
	// Dated is the dated route: Path followed by /{year}/{month}/{day} or /{year}/{month}, the
	// archive of a UTC day or month, oldest first, 20 per page, JSON or CSV. "" for none.
	Dated string
	// Where selects the scope's rows, with the path variables written @name: "symbol = @symbol".
	// Several predicates are read as a union (a swap belongs to both its markets); each must exclude
	// the rows of those before it, so that no record is listed twice.
	Where []string
	// Limit is the rolling route's limit parameter. The zero Limit is a fixed page of 20 and no
	// parameter.
	Limit Limit
	// Check validates the path variables before anything is read: an unknown market is
	// fault.NotFound, a malformed account fault.Invalid. nil checks nothing.
	Check func(ctx context.Context, vars map[string]string) error
	// Record is the CSV layout of the series' records (LayoutOf[events.Fill]()).
	Record *Layout
	// Column is the json column holding the records the series serves (default "record"): a table
	// may hold a second view of some of its rows, a closed position beside its fill.
	Column string
	// Export makes the series an export file type on the internal port; nil: it is not one.
	Export *Export
}

// Limit is a rolling route's limit query parameter: its default and its maximum.
type Limit struct{ Default, Max int }

// Export declares how a series is exported: GET /internal/exports/{FileType}?from&to&accounts&market
// streams every record of the range (both ends inclusive) that the job's accounts and market select,
// oldest first, as CSV with the record count in a trailer (exportstream).
type Export struct {
	// FileType is the export file type the series serves ("market-trades").
	FileType string
	// Where restricts every export of the series ("category = 'deposit'"); "" for none.
	Where string
	// Accounts selects the rows of the job's accounts, the array written @accounts:
	// "account = ANY(@accounts)". "" when the records belong to markets rather than accounts: the
	// job's accounts are then not a filter (every job names some) and are ignored.
	Accounts string
	// Market selects the rows of the job's market, the symbol written @market: "symbol = @market".
	// "" when the records have no market: a job naming one is refused.
	Market string
	// RequireMarket refuses jobs without a market (a market's records are exported one market at a
	// time).
	RequireMarket bool
	// CheckMarket validates a job's market before anything is read (an unknown market:
	// fault.NotFound); nil checks nothing.
	CheckMarket func(ctx context.Context, symbol string) error
	// Order is the ORDER BY of the export, default "ts, tx_sig, tx_sig_index": a table whose rows
	// repeat a record for several accounts adds its account column so the order is total.
	Order string
}

var (
	pathVar  = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	namedArg = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)
	ident    = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// vars lists the path variables of a route template in order.
func vars(path string) []string {
	var out []string
	for _, m := range pathVar.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// validate checks a declaration, so that a mistake stops the service at start-up with its name.
func (s Series) validate() error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("series %s (%s): %s", s.Name, s.Path, fmt.Sprintf(format, args...))
	}
	switch {
	case s.Name == "" || s.Path == "" || !ident.MatchString(strings.ToLower(s.Name)):
		return fail("needs a name and a path")
	case !ident.MatchString(s.Table):
		return fail("table %q is not a plain table name", s.Table)
	case len(s.Where) == 0:
		return fail("needs a Where predicate")
	case s.Record == nil:
		return fail("needs a Record layout")
	case s.Column != "" && !ident.MatchString(s.Column):
		return fail("column %q is not a plain column name", s.Column)
	case s.Limit.Default < 0 || s.Limit.Max < s.Limit.Default || (s.Limit.Max > 0 && s.Limit.Default < 1):
		return fail("limit %+v: want 1 <= default <= max", s.Limit)
	}
	pv := vars(s.Path)
	for _, w := range s.Where {
		for _, m := range namedArg.FindAllStringSubmatch(w, -1) {
			if !slices.Contains(pv, m[1]) {
				return fail("predicate %q names @%s, which is no variable of the path", w, m[1])
			}
		}
	}
	if s.Dated != "" {
		if !strings.HasPrefix(s.Dated, s.Path+"/") || !(strings.HasSuffix(s.Dated, "/{year}/{month}") || strings.HasSuffix(s.Dated, "/{year}/{month}/{day}")) {
			return fail("dated route %s is not the path followed by /{year}/{month}[/{day}]", s.Dated)
		}
	}
	if e := s.Export; e != nil {
		if e.FileType == "" {
			return fail("export needs a file type")
		}
		if e.RequireMarket && e.Market == "" {
			return fail("export requires a market but has no market predicate")
		}
		for _, p := range []struct{ sql, arg string }{{e.Where, ""}, {e.Accounts, "accounts"}, {e.Market, "market"}} {
			for _, m := range namedArg.FindAllStringSubmatch(p.sql, -1) {
				if m[1] != p.arg {
					return fail("export predicate %q names @%s, which it cannot", p.sql, m[1])
				}
			}
		}
	}
	return nil
}

// bind replaces the named arguments of sql by positional ones: @name becomes $n where name is
// names[n-1].
func bind(sql string, names []string) string {
	return namedArg.ReplaceAllStringFunc(sql, func(m string) string {
		i := slices.Index(names, m[1:])
		if i < 0 {
			panic("series: unbound argument " + m) // validate checked every name
		}
		return fmt.Sprintf("$%d", i+1)
	})
}
