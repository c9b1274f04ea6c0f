package service_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/services/market/service"
)

// benchExportFills is how many fills the export benchmark streams.
const benchExportFills = 200_000

// BenchmarkExportFills streams benchExportFills fills (about 1.2 KB of JSON each, across a month
// boundary) through the export endpoint over HTTP and reads the CSV to the end, against Postgres
// streaming the same rows' records with COPY (SELECT record ... ORDER BY ...) TO STDOUT in the same
// run. Both ends share this machine's cores, so the ratio is the figure that travels. It reports
// rows/s of both, their ratio and the peak Go heap while the endpoint streams.
//
//	go test ./services/market/service -run '^$' -bench ExportFills -benchtime 5x
//
// The export is of one market's fills of one account, as every export of market-trades is.
func BenchmarkExportFills(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b, pgtest.Server())
	// The service never runs: the fills go straight into the table.
	inst, err := kit.Start(ctx, service.Service(service.Config{}), kit.Runtime{
		Pool: pool, Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}, Now: func() time.Time { return now },
	}, kit.Settings{})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(inst.InternalMux(prometheus.NewRegistry()))
	b.Cleanup(srv.Close)
	from := at("2026-10-31T12:00:00Z")
	copyFills(b, pool, from, benchExportFills)
	to := from + benchExportFills/2
	// The catalogue entry the ingest would have made; and hint bits and the visibility map set now,
	// or the first reader pays for the writes.
	for _, sql := range []string{
		"INSERT INTO market.markets VALUES ('SOL-PERP', 0, 'perp', 'perp') ON CONFLICT DO NOTHING",
		"VACUUM ANALYZE market.fills",
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatal(err)
		}
	}

	for _, bm := range []struct{ name, accounts, where string }{
		// Every fill is the taker's (key 2): the filter selects them all.
		{"one-market", key(2), fmt.Sprintf("symbol = 'SOL-PERP' AND (taker = ANY('{%[1]s}') OR maker = ANY('{%[1]s}')) AND ", key(2))},
	} {
		b.Run(bm.name, func(b *testing.B) {
			path := fmt.Sprintf("%s/internal/exports/market-trades?from=%d&to=%d&market=SOL-PERP&accounts=%s", srv.URL, from, to, bm.accounts)
			copySQL := fmt.Sprintf("COPY (SELECT record FROM market.fills WHERE %sts >= %d AND ts <= %d ORDER BY ts, tx_sig, tx_sig_index) TO STDOUT",
				bm.where, from, to)
			// COPY as the planner likes it (for a range that is most of the table: scan and sort),
			// and with the export connection's plan (index order, enable_sort off). The faster is
			// the baseline.
			copyPlanned := func() { copyRows(b, pool, "", copySQL) }
			copyIndexed := func() { copyRows(b, pool, "SET enable_sort = off", copySQL) }
			// One of each first: caches warm.
			copyPlanned()
			copyIndexed()
			exportRows(b, srv.Client(), path)

			var plannedTime, indexedTime, exportTime time.Duration
			var peak, size int64
			for b.Loop() {
				start := time.Now()
				copyPlanned()
				plannedTime += time.Since(start)
				start = time.Now()
				copyIndexed()
				indexedTime += time.Since(start)

				stop := sampleHeap(&peak)
				start = time.Now()
				size = exportRows(b, srv.Client(), path)
				exportTime += time.Since(start)
				stop()
			}
			rows := float64(benchExportFills) * float64(b.N)
			exportRate := rows / exportTime.Seconds()
			copyRate := rows / min(plannedTime, indexedTime).Seconds()
			b.ReportMetric(exportRate, "export_rows/s")
			b.ReportMetric(float64(size)*float64(b.N)/exportTime.Seconds()/1e6, "export_MB/s")
			b.ReportMetric(copyRate, "copy_rows/s")
			b.ReportMetric(exportRate/copyRate, "ratio")
			b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MB")
			b.ReportMetric(0, "ns/op")
			b.Logf("COPY TO: %.0f rows/s as planned, %.0f rows/s in index order; export %.0f rows/s, %d bytes of CSV per run",
				rows/plannedTime.Seconds(), rows/indexedTime.Seconds(), exportRate, size)
		})
	}
}

// copyRows runs a COPY ... TO STDOUT into io.Discard on a connection of its own, after setup when
// not empty, and checks it carried every fill.
func copyRows(b *testing.B, pool *pgxpool.Pool, setup, sql string) {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if setup != "" {
		if _, err := conn.Exec(ctx, setup); err != nil {
			b.Fatal(err)
		}
	}
	tag, err := conn.PgConn().CopyTo(ctx, io.Discard, sql)
	if err != nil || tag.RowsAffected() != benchExportFills {
		b.Fatalf("%s: %d rows, %v", sql, tag.RowsAffected(), err)
	}
}

// exportRows reads one export to its end and checks its declared record count; it returns the body's
// size.
func exportRows(b *testing.B, client *http.Client, url string) int64 {
	b.Helper()
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("export answered %d", resp.StatusCode)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatalf("read export: %v", err)
	}
	if got := resp.Trailer.Get(exportstream.RecordCountTrailer); got != strconv.Itoa(benchExportFills) {
		b.Fatalf("export declared %q records, want %d", got, benchExportFills)
	}
	return n
}

// sampleHeap records the largest live heap seen, every few milliseconds, until the returned stop is
// called. runtime/metrics reads it without stopping the world.
func sampleHeap(peak *int64) (stop func()) {
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for !done.Load() {
			metrics.Read(s)
			if v := int64(s[0].Value.Uint64()); v > *peak {
				*peak = v
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() {
		done.Store(true)
		<-finished
	}
}
