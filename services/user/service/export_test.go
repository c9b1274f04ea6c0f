package service_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// exportCSV reads one export from the user service's internal port.
func exportCSV(t *testing.T, s *kittest.Stack, query string) (int, string, string) {
	t.Helper()
	a := kittest.Fetch(t, http.MethodGet, s.InternalServer(t, "user").URL+exportstream.PathPrefix+query)
	return a.Status, string(a.Body), a.Trailer.Get(exportstream.RecordCountTrailer)
}

// TestExportsOfTheAccounts exports each account-scoped file type of the seeded accounts and compares
// the rows with what the dated CSV answers of those accounts hold.
func TestExportsOfTheAccounts(t *testing.T) {
	s := start(t)
	seed(t, s)
	from, to := kittest.At("2026-11-18T00:00:00Z"), kittest.At("2026-11-19T23:59:59Z")
	cases := []struct {
		fileType, series, market string
		accounts                 []string
		records                  int
	}{
		{"trades", "trades", "", []string{taker}, 4},
		{"trades", "trades", "SOL-PERP", []string{taker}, 2},
		{"trades", "trades", "", []string{taker, maker}, 8},
		{"deposits", "deposits", "USDC", []string{taker, maker}, 2},
		{"rewards", "rewards", "", []string{maker}, 1},
		{"swap-records", "swaps", "SOL", []string{taker}, 1},
		{"funding-payments", "fundingPayments", "SOL-PERP", []string{taker}, 1},
		{"funding-payments", "fundingPayments", "TRUMP-WIN-2028-BET", []string{taker}, 0},
		{"settle-pnl-records", "settlePnl", "", []string{taker, maker}, 2},
		{"liquidations", "liquidations", "SOL-PERP", []string{maker}, 1},
		{"lp-records", "lp", "", []string{taker}, 1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %s %v", c.fileType, c.market, c.accounts), func(t *testing.T) {
			q := fmt.Sprintf("%s?from=%d&to=%d&accounts=%s", c.fileType, from, to, strings.Join(c.accounts, ","))
			if c.market != "" {
				q += "&market=" + c.market
			}
			status, body, count := exportCSV(t, s, q)
			if status != http.StatusOK || count != fmt.Sprint(c.records) {
				t.Fatalf("status %d, %s records: %s", status, count, body)
			}
			rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
			if err != nil || len(rows) != c.records+1 {
				t.Fatalf("%d rows (%v)", len(rows), err)
			}
			// Every exported row is a row of the accounts' dated CSV.
			var dated bytes.Buffer
			for _, a := range c.accounts {
				dated.WriteString(s.Get(t, "/user/"+a+"/"+c.series+"/2026/11?format=csv").Body.String())
			}
			lines := strings.SplitAfter(body, "\n")
			for _, l := range lines[1:] {
				if l != "" && !strings.Contains(dated.String(), l) {
					t.Errorf("exported row %q is no dated row", l)
				}
			}
			if !slices.IsSortedFunc(rows[1:], func(a, b []string) int { return strings.Compare(a[0], b[0]) }) {
				t.Errorf("rows are not oldest first")
			}
		})
	}
	for _, c := range []struct {
		query   string
		status  int
		message string
	}{
		{fmt.Sprintf("trades?from=%d&to=%d", from, to), 400, "accounts is required"},
		{fmt.Sprintf("trades?from=%d&to=%d&accounts=%s&market=DOGE-PERP", from, to, taker), 404, "market DOGE-PERP not found"},
		{fmt.Sprintf("funding-payments?from=%d&to=%d&accounts=%s&market=USDC", from, to, taker), 404, "USDC is not a perp market"},
		{fmt.Sprintf("market-trades?from=%d&to=%d&accounts=%s", from, to, taker), 404, "not served here"},
	} {
		status, body, _ := exportCSV(t, s, c.query)
		if status != c.status || !strings.Contains(body, c.message) {
			t.Errorf("%s: %d %s, want %d %q", c.query, status, body, c.status, c.message)
		}
	}
}
