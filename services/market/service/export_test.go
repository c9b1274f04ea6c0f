package service_test

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market/postgres"
)

// exportServer serves the service's internal routes over a real connection, so that chunked bodies,
// trailers and aborted responses behave as they do for the operator.
func exportServer(t testing.TB, s *stack) *httptest.Server {
	t.Helper()
	return s.InternalServer(t, "market")
}

// keyed is a record's identity and position in an export.
type keyed struct {
	ts    int64
	sig   string
	index int
}

func (k keyed) String() string { return fmt.Sprintf("%s/%d", k.sig, k.index) }

// datedRows reads the dated CSV of every (path prefix, day) and returns its header line and its rows
// keyed by txSig/txSigIndex, each the exact line the endpoint wrote.
func datedRows(t *testing.T, s *stack, paths []string) (header string, rows map[string]string) {
	t.Helper()
	rows = map[string]string{}
	for _, p := range paths {
		rec := s.get(t, p+"?format=csv")
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, rec.Code, rec.Body.String())
		}
		lines := strings.SplitAfter(rec.Body.String(), "\n")
		lines = lines[:len(lines)-1] // after the last "\n"
		if len(lines) > 20 {
			t.Fatalf("GET %s: a second page would be needed", p)
		}
		if header != "" && header != lines[0] {
			t.Fatalf("GET %s: header %q, another page had %q", p, lines[0], header)
		}
		header = lines[0]
		for _, l := range lines[1:] {
			f, err := csv.NewReader(strings.NewReader(l)).Read()
			if err != nil {
				t.Fatalf("GET %s: row %q: %v", p, l, err)
			}
			rows[f[1]+"/"+f[2]] = l
		}
	}
	return header, rows
}

// TestExportsEqualTheDatedCSV exports fills and funding rates over ranges that cut through records,
// markets and a month boundary, and compares every answer byte for byte with the rows the dated CSV
// endpoints write for the same records, in (ts, txSig, txSigIndex) order.
func TestExportsEqualTheDatedCSV(t *testing.T) {
	s := startStack(t)
	srv := exportServer(t, s)

	// Fills of three markets around the end of October (two partitions), on the edges of the
	// ranges below, and several sharing one second and one transaction.
	oct31, nov1, nov18 := at("2026-10-31T23:59:59Z"), at("2026-11-01T00:00:00Z"), at("2026-11-18T12:00:00Z")
	var fills []*events.Fill
	add := func(m mkt, ts int64, id int) *events.Fill {
		f := fill(m, ts, id, 150_000_000+int64(id), 1_000_000_000, 150_000_000)
		fills = append(fills, f)
		return f
	}
	add(solPerp, oct31-3600, 1)
	add(solPerp, oct31-1, 2) // just before the ranges that start at oct31
	add(btcPerp, oct31, 3)
	add(solPerp, oct31, 4)
	add(betMkt, oct31, 5)
	for i := 2; i >= 0; i-- { // one transaction, three fills, produced last index first
		f := add(solPerp, nov1, 6+i)
		f.TxSig, f.TxSigIndex = sig("fills", 6), i
	}
	add(btcPerp, nov1, 9)
	other := add(solPerp, nov1+1, 10) // just after the ranges that end at nov1
	other.Taker, other.Maker = key(7), key(8)
	add(solPerp, nov18, 11)
	add(solSpot, nov18+5, 12)
	rates := []*events.FundingRate{
		fundingRate(solPerp, oct31-3600, 1), fundingRate(solPerp, oct31, 2), fundingRate(btcPerp, oct31, 3),
		fundingRate(solPerp, nov1, 4), fundingRate(solPerp, nov18, 5),
	}
	recs := make([]events.Record, len(fills))
	for i, f := range fills {
		recs[i] = f
	}
	frecs := make([]events.Record, len(rates))
	for i, r := range rates {
		frecs[i] = r
	}
	s.ingest(t, append(encode(t, events.TopicFills, recs...), encode(t, events.TopicFundingRates, frecs...)...)...)

	fillHeader, fillRows := datedRows(t, s, []string{
		"/market/SOL-PERP/trades/2026/10/31", "/market/SOL-PERP/trades/2026/11/01", "/market/SOL-PERP/trades/2026/11/18",
		"/market/BTC-PERP/trades/2026/10/31", "/market/BTC-PERP/trades/2026/11/01",
		"/market/TRUMP-WIN-2028-BET/trades/2026/10/31", "/market/SOL/trades/2026/11/18",
	})
	rateHeader, rateRows := datedRows(t, s, []string{
		"/market/SOL-PERP/fundingRates/2026/10/31", "/market/SOL-PERP/fundingRates/2026/11/01",
		"/market/SOL-PERP/fundingRates/2026/11/18", "/market/BTC-PERP/fundingRates/2026/10/31",
	})
	if len(fillRows) != len(fills) || len(rateRows) != len(rates) {
		t.Fatalf("dated CSVs hold %d fills and %d rates, want %d and %d", len(fillRows), len(rateRows), len(fills), len(rates))
	}

	var fillKeys, rateKeys []keyed
	symbolOf := map[string]string{}
	accountsOf := map[string][]string{}
	for _, f := range fills {
		k := keyed{f.Ts, f.TxSig, f.TxSigIndex}
		fillKeys = append(fillKeys, k)
		symbolOf[k.String()] = f.Symbol
		accountsOf[k.String()] = []string{f.Taker, f.Maker}
	}
	for _, r := range rates {
		k := keyed{r.Ts, r.TxSig, r.TxSigIndex}
		rateKeys = append(rateKeys, k)
		symbolOf[k.String()] = r.Symbol
	}
	// want is the export of keys in [from, to] of symbol, of accounts (nil: any), built from the dated
	// rows.
	want := func(header string, rows map[string]string, keys []keyed, symbol string, accounts []string, from, to int64) (string, int) {
		var sel []keyed
		for _, k := range keys {
			ofAccounts := accounts == nil || slices.ContainsFunc(accountsOf[k.String()], func(a string) bool { return slices.Contains(accounts, a) })
			if k.ts >= from && k.ts <= to && symbolOf[k.String()] == symbol && ofAccounts {
				sel = append(sel, k)
			}
		}
		slices.SortFunc(sel, func(a, b keyed) int {
			return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.sig, b.sig), cmp.Compare(a.index, b.index))
		})
		var b strings.Builder
		b.WriteString(header)
		for _, k := range sel {
			b.WriteString(rows[k.String()])
		}
		return b.String(), len(sel)
	}

	cases := []struct {
		name, fileType, market string
		accounts               []string
		from, to               int64
		records                int
	}{
		{"one market across the month boundary", "market-trades", "SOL-PERP", []string{key(2)}, oct31, nov1, 4},
		{"the taker's and the maker's fills alike", "market-trades", "SOL-PERP", []string{key(3)}, oct31, nov1, 4},
		{"another account's fill only", "market-trades", "SOL-PERP", []string{key(8)}, oct31, nov18, 1},
		{"several accounts", "market-trades", "SOL-PERP", []string{key(7), key(2)}, oct31 - 86400, nov18 + 86400, 8},
		{"a single second", "market-trades", "SOL-PERP", []string{key(2)}, nov1, nov1, 3},
		{"a prediction market", "market-trades", "TRUMP-WIN-2028-BET", []string{key(2)}, oct31, nov1, 1},
		{"a spot market", "market-trades", "SOL", []string{key(2)}, nov18, nov18 + 5, 1},
		{"nothing in range", "market-trades", "BTC-PERP", []string{key(2)}, nov18, nov18 + 86400, 0},
		{"no fill of the account", "market-trades", "SOL-PERP", []string{key(11)}, oct31, nov18, 0},
		// Funding rates belong to markets: the job's accounts are no filter.
		{"funding rates of one market", "funding-rates", "SOL-PERP", nil, oct31, nov18, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			accounts := c.accounts
			if accounts == nil {
				accounts = []string{key(11)}
			}
			path := fmt.Sprintf("/internal/exports/%s?accounts=%s&from=%d&to=%d&market=%s", c.fileType, strings.Join(accounts, ","),
				c.from, c.to, c.market)
			header, rows, keys := fillHeader, fillRows, fillKeys
			if c.fileType == "funding-rates" {
				header, rows, keys = rateHeader, rateRows, rateKeys
			}
			exp, n := want(header, rows, keys, c.market, c.accounts, c.from, c.to)
			if n != c.records {
				t.Fatalf("test expects %d records, the data has %d", c.records, n)
			}
			got := kittest.Fetch(t, http.MethodGet, srv.URL+path)
			if got.Status != http.StatusOK {
				t.Fatalf("status %d: %s", got.Status, got.Body)
			}
			if ct := got.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			if cd, w := got.Header.Get("Content-Disposition"), fmt.Sprintf(`attachment; filename="export-%s-%s-%d-%d.csv"`, c.market, c.fileType, c.from, c.to); cd != w {
				t.Errorf("Content-Disposition %q, want %q", cd, w)
			}
			if string(got.Body) != exp {
				t.Fatalf("export:\n%s\nwant the dated rows:\n%s", got.Body, exp)
			}
			if tr := got.Trailer.Get(exportstream.RecordCountTrailer); tr != strconv.Itoa(c.records) {
				t.Fatalf("trailer %s = %q, want %d", exportstream.RecordCountTrailer, tr, c.records)
			}
		})
	}
}

// TestExportRejects covers every 400 and 404 of the export route.
func TestExportRejects(t *testing.T) {
	s := startStack(t)
	seed(t, s)
	srv := exportServer(t, s)
	const maxRange = 366 * 86400
	q := "market=SOL-PERP&accounts=" + key(2)
	cases := []kittest.Refusal{
		{Path: "/internal/exports/market-trades?to=10", Status: 400, Message: "from is required"},
		{Path: "/internal/exports/market-trades?from=&to=10", Status: 400, Message: "from is required"},
		{Path: "/internal/exports/market-trades?from=10", Status: 400, Message: "to is required"},
		{Path: "/internal/exports/market-trades?from=-1&to=10", Status: 400, Message: "from must be an integer between 0 and"},
		{Path: "/internal/exports/market-trades?from=0&to=-10", Status: 400, Message: "to must be an integer between 0 and"},
		{Path: "/internal/exports/market-trades?from=1.5&to=10", Status: 400, Message: "from must be an integer"},
		{Path: "/internal/exports/market-trades?from=0&to=1e3", Status: 400, Message: "to must be an integer"},
		{Path: "/internal/exports/market-trades?from=abc&to=10", Status: 400, Message: "from must be an integer"},
		{Path: "/internal/exports/market-trades?from=11&to=10", Status: 400, Message: "from must not be after to"},
		{Path: fmt.Sprintf("/internal/exports/funding-rates?from=100&to=%d&%s", 100+maxRange+1, q), Status: 400, Message: "at most 366 days"},
		{Path: fmt.Sprintf("/internal/exports/funding-rates?from=100&to=%d&%s", 100+maxRange, q), Status: 200, Message: ""},
		{Path: "/internal/exports/market-trades?from=10&to=10&" + q, Status: 200, Message: ""},
		{Path: "/internal/exports/market-trades?from=10&to=10&market=SOL-PERP", Status: 400, Message: "accounts is required"},
		{Path: "/internal/exports/market-trades?from=10&to=10&market=SOL-PERP&accounts=,", Status: 400, Message: "accounts is required"},
		{Path: "/internal/exports/market-trades?from=10&to=10&market=SOL-PERP&accounts=Acct0", Status: 400, Message: `"Acct0" is not an account key`},
		{Path: "/internal/exports/market-trades?from=10&to=10&market=SOL-PERP&accounts=" + strings.Repeat(key(1)+",", 101), Status: 400, Message: "at most 100 accounts"},
		// A market's trades or funding rates are exported one market at a time, never the whole exchange.
		{Path: "/internal/exports/market-trades?from=10&to=10&accounts=" + key(2), Status: 400, Message: "market is required"},
		{Path: "/internal/exports/funding-rates?from=10&to=10&accounts=" + key(2), Status: 400, Message: "market is required"},
		{Path: "/internal/exports/market-trades?from=0&to=10&accounts=" + key(2) + "&market=DOGE-PERP", Status: 404, Message: "market DOGE-PERP not found"},
		{Path: "/internal/exports/funding-rates?from=0&to=10&accounts=" + key(2) + "&market=USDC", Status: 404, Message: "USDC is not a perp market"},
		{Path: "/internal/exports/unknown?from=0&to=10", Status: 404, Message: "export type unknown is not served here"},
	}
	for _, ft := range []string{"trades", "funding-payments", "deposits", "liquidations", "settle-pnl-records",
		"lp-records", "if-stake-records", "swap-records", "rewards"} {
		cases = append(cases, kittest.Refusal{Path: "/internal/exports/" + ft + "?" + q + "&from=0&to=10", Status: 404,
			Message: "export type " + ft + " is not served here"})
	}
	for _, c := range cases {
		t.Run(c.Path, func(t *testing.T) {
			got := kittest.Fetch(t, http.MethodGet, srv.URL+c.Path)
			c.Check(t, got.Status, got.Body)
			if ct := got.Header.Get("Content-Type"); c.Status != http.StatusOK && !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// startLargeExport stores a day of SOL-PERP fills, far more than the socket buffers between the
// database, the handler and the client hold, requests their export and reads its start: the export's
// database session is then mid-stream. The caller closes the body.
func startLargeExport(t *testing.T, s *stack) *http.Response {
	t.Helper()
	srv := exportServer(t, s)
	from := at("2026-11-01T00:00:00Z")
	copyFills(t, s.Pool, from, 40_000)
	resp, err := srv.Client().Get(fmt.Sprintf("%s/internal/exports/market-trades?from=%d&to=%d&market=SOL-PERP&accounts=%s", srv.URL, from, from+86400, key(2)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 64<<10)); err != nil {
		resp.Body.Close()
		t.Fatalf("read the start of the export: %v", err)
	}
	return resp
}

// TestExportAbortsWhenTheDatabaseFails kills the export's database session mid-stream: the client
// must see a body that ends in an error and no record count, never a clean short file.
func TestExportAbortsWhenTheDatabaseFails(t *testing.T) {
	s := startStack(t)
	resp := startLargeExport(t, s)
	defer resp.Body.Close()
	var killed bool
	err := s.Pool.QueryRow(context.Background(), `SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
		WHERE pid <> pg_backend_pid() AND query LIKE 'SELECT record FROM "market"."fills"%'`).Scan(&killed)
	if err != nil || !killed {
		t.Fatalf("terminate the export's session: %v (found: %v)", err, killed)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil {
		t.Fatalf("the body ended cleanly after %d more bytes", n)
	}
	if v := resp.Trailer.Get(exportstream.RecordCountTrailer); v != "" {
		t.Fatalf("a cut-short export declared %s records", v)
	}
}

// TestExportStopsReadingWhenTheClientLeaves reads the start of a large export and hangs up: the
// export's database session must end then, not after reading every remaining row.
func TestExportStopsReadingWhenTheClientLeaves(t *testing.T) {
	s := startStack(t)
	resp := startLargeExport(t, s)
	sessions := func() int {
		var n int
		err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND query LIKE 'SELECT record FROM "market"."fills"%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if sessions() != 1 {
		t.Fatal("no export session while the export streams")
	}
	resp.Body.Close() // unread: the connection is closed
	kittest.Eventually(t, 10*time.Second, "the export sessions to end", func() bool { return sessions() == 0 })
}

// copyFills writes n fills of SOL-PERP, two per second from ts, straight into the fills table as
// the ingest stores them (no broker, no candles: exports read nothing else).
func copyFills(tb testing.TB, pool *pgxpool.Pool, ts int64, n int) {
	tb.Helper()
	table := postgres.FillsTable("market")
	i := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		f := fill(solPerp, ts+int64(i/2), i+1, 150_000_000+int64(i), 1_000_000_000, 150_000_000)
		i++
		b, err := json.Marshal(f)
		if err != nil {
			return nil, err
		}
		return table.Row(postgres.StoredFill{Record: f, JSON: b}), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The catalogue entry the ingest would have made: exports check the market.
	if _, err := pool.Exec(ctx, "INSERT INTO market.markets VALUES ('SOL-PERP', 0, 'perp', 'perp') ON CONFLICT DO NOTHING"); err != nil {
		tb.Fatal(err)
	}
	got, err := pool.CopyFrom(ctx, pgx.Identifier{"market", "fills"}, table.Columns, src)
	if err != nil || got != int64(n) {
		tb.Fatalf("copy %d fills: %d, %v", n, got, err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE market.fills"); err != nil {
		tb.Fatal(err)
	}
}
