package bench_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/kit"
	user "github.com/tidemark/tidemark/services/user/service"
)

const (
	userRows           = 10_000_000
	userDatasetVersion = "user-fills-v2"
)

// userDataset makes sure the bench_rest database holds userRows rows of users.fills over the 30 days
// before the market dataset's clock (the same clock), generating them in SQL the first time: fills of
// four perp markets, each stored for its taker (one of 300 accounts) and its maker (one of three market
// makers) with user set, a third of them with a closed-position record beside, as the ingest stores
// them.
func userDataset(b *testing.B, pool *pgxpool.Pool, now time.Time) {
	b.Helper()
	ctx := context.Background()
	rows, _ := storedDataset(ctx, b, pool, userDatasetVersion)
	reuse := rows == userRows
	if !reuse {
		// The schema of an older dataset version may be older too.
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS users CASCADE"); err != nil {
			b.Fatal(err)
		}
	}
	// A service built only to migrate.
	startService(b, pool, benchBroker(b), user.Service(), kit.Settings{}, time.Now)
	if reuse {
		b.Logf("reusing the %d-row user dataset", rows)
		return
	}
	span := int64(30 * 86400)
	start := now.Unix() - span
	for lo := int64(1); lo <= userRows; lo += restChunk {
		roomFor(b, "user fill rows")
		t0 := time.Now()
		_, err := pool.Exec(ctx, `
			INSERT INTO users.fills (account, ts, tx_sig, tx_sig_index, slot, symbol, prediction, order_id, record, position, fill_record_id)
			SELECT account, ts, sig, 0, slot, sym, false, order_id, rec::json,
			  CASE WHEN f % 3 = 0 THEN (left(rec, -1) || format(',"userFee":"%s","baseClosedForPnl":"%s","userExistingBaseAssetAmount":"%s","userExistingQuoteEntryAmount":"-%s"}',
			    quote * 35 / 100000, base, base * 2, quote * 2))::json END, f
			FROM (
			  SELECT f, account, sig, ts, slot, sym, base, quote, order_id,
			    format('{"ts":%s,"txSig":"%s","txSigIndex":0,"slot":%s,"fillerReward":"0","baseAssetAmountFilled":"%s","quoteAssetAmountFilled":"%s","takerFee":"%s","makerRebate":"%s","referrerReward":"0","quoteAssetAmountSurplus":"0","takerOrderBaseAssetAmount":"%s","takerOrderCumulativeBaseAssetAmountFilled":"%s","takerOrderCumulativeQuoteAssetAmountFilled":"%s","makerOrderBaseAssetAmount":"%s","makerOrderCumulativeBaseAssetAmountFilled":"%s","makerOrderCumulativeQuoteAssetAmountFilled":"%s","oraclePrice":"%s","makerFee":"-%s","action":"fill","actionExplanation":"orderFilledWithMatch","marketIndex":%s,"marketType":"perp","filler":"%s","fillRecordId":"%s","taker":"%s","takerOrderId":"%s","takerOrderDirection":"long","maker":"%s","makerOrderId":"%s","makerOrderDirection":"short","spotFulfillmentMethodFee":"0","marketFilter":"perp","symbol":"%s","user":"%s"}',
			      ts, sig, slot, base, quote, quote * 35 / 100000, quote / 100000, base, base, quote, base, base, quote, price,
			      quote / 100000, idx, taker, f, taker, f * 2, maker, f * 2 + 1, sym, account) AS rec
			  FROM (
			    SELECT f, sig, ts, slot, sym, idx, price, base, (base::numeric * price / 1000000000)::bigint AS quote, taker, maker,
			           CASE WHEN i % 2 = 0 THEN taker ELSE maker END AS account,
			           CASE WHEN i % 2 = 0 THEN (f * 2)::text ELSE (f * 2 + 1)::text END AS order_id
			    FROM (
			      SELECT i, (i + 1) / 2 AS f FROM generate_series($1::bigint, $2::bigint) AS i
			    ) g, LATERAL (
			      SELECT encode(sha256(f::text::bytea), 'hex') AS sig, $3::bigint + f * $4::bigint / ($5::bigint / 2) AS ts,
			             (ARRAY['SOL-PERP','SOL-PERP','BTC-PERP','ETH-PERP','JUP-PERP'])[f % 5 + 1] AS sym,
			             (ARRAY[0, 0, 1, 2, 4])[f % 5 + 1] AS idx,
			             (ARRAY[150, 150, 60000, 3000, 1])[f % 5 + 1]::bigint * 1000000 + (f % 1000) * 1000 AS price,
			             (1 + f % 50) * 100000000::bigint AS base,
			             ($6::text[])[f * 7919 % 300 + 1] AS taker, ($7::text[])[f % 3 + 1] AS maker,
			             300000000 + ($3::bigint + f * $4::bigint / ($5::bigint / 2)) * 5 / 2 AS slot
			    ) x
			  ) y
			) z`, lo, min(lo+restChunk-1, userRows), start, span, userRows, takers(), makers())
		if err != nil {
			b.Fatalf("generate user fills %d..: %v", lo, err)
		}
		b.Logf("generated user fill rows up to %d (%s)", min(lo+restChunk-1, userRows), time.Since(t0).Round(time.Millisecond))
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE users.fills"); err != nil {
		b.Fatal(err)
	}
	recordDataset(ctx, b, pool, userDatasetVersion, userRows, now)
}

// BenchmarkUserTradesREST serves GET /user/{accountId}/trades over 10 M user fill rows to 16 concurrent
// keep-alive connections, every request its own read (a parameter the route ignores makes every URL
// distinct, so no two requests share one), against a bare net/http handler answering the same 20
// records from memory in the same run. Target: >= 0.3 x the bare handler's throughput, p99 < 10 ms.
func BenchmarkUserTradesREST(b *testing.B) {
	for range b.N {
		pool := database(b, "bench_rest", false)
		now := restDataset(b, pool)
		userDataset(b, pool, now)
		svc := startService(b, pool, benchBroker(b), user.Service(), kit.Settings{}, func() time.Time { return now })
		runService(b, svc)
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		account := takers()[7]
		firstPage := get(b, srv.URL+"/user/"+account+"/trades")
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(firstPage)
		}))
		defer bare.Close()
		var seq atomic.Int64
		runs := compareREST(b, "", []restScenario{
			{name: "bare handler, same 20 records from memory", url: func(int) string { return bare.URL + "/" }},
			{name: "user trades, first page, every request its own read", url: func(int) string {
				return srv.URL + "/user/" + account + "/trades?n=" + strconv.FormatInt(seq.Add(1), 10)
			}},
		}, nil)
		ratio := runs[1].best.RPS / runs[0].best.RPS
		b.ReportMetric(runs[0].best.RPS, "bare_req/s")
		b.ReportMetric(runs[1].best.RPS, "user_trades_req/s")
		b.ReportMetric(ratio, "solo_ratio")
		b.ReportMetric(float64(runs[1].worstP99.Microseconds())/1000, "p99_ms")
		b.Logf("RESULT user: first page of one account's trades over %d rows, every request its own read, %d connections: "+
			"%.0f req/s against the bare handler's %.0f: %s, p99 %s (worst round; target < 10 ms)",
			userRows, restConcurrency, runs[1].best.RPS, runs[0].best.RPS, atLeast(ratio, 0.3), runs[1].worstP99)
	}
}
