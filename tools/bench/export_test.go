package bench_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/local"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
)

// BenchmarkExportFills exports SOL-PERP's fills of eight days of the REST dataset (over 1 M rows, all of
// them made by the three market makers whose export it is)
// the way an ExportJob does: the operator's state machine (here driven by the local runner) streams
// the CSV from the market service's internal export route into MinIO, counting rows, then writes the
// manifest. The baseline, in the same run, is Postgres COPY TO of the same rows (the stored records,
// same range and order) into nothing. Target: export rows/s >= 0.5 x COPY TO rows/s.
func BenchmarkExportFills(b *testing.B) {
	for range b.N {
		ctx := context.Background()
		pool := database(b, "bench_rest", false)
		now := restDataset(b, pool)
		svc, _ := marketService(b, pool, func() time.Time { return now })
		internal := httptest.NewServer(svc.InternalMux(prometheus.NewRegistry()))
		b.Cleanup(internal.Close)

		minio := miniotest.Start(b)
		store, err := objstore.NewS3(ctx, minio.Config("bench-exports"))
		if err != nil {
			b.Fatal(err)
		}
		from, to := now.Add(-9*24*time.Hour).Unix(), now.Add(-24*time.Hour).Unix()

		copyRows, copyTime := copyBaseline(b, pool, from, to)
		b.Logf("COPY TO: %d rows in %s = %.0f rows/s", copyRows, copyTime.Round(time.Millisecond), rate(copyRows, copyTime))
		if copyRows < 1_000_000 {
			b.Fatalf("the range holds %d fills, want at least 1 M", copyRows)
		}

		endpointRows, endpointBytes, endpointTime := readEndpoint(b, internal.URL, from, to)
		b.Logf("internal export route alone: %d rows (%.0f MB) in %s = %.0f rows/s",
			endpointRows, float64(endpointBytes)/1e6, endpointTime.Round(time.Millisecond), rate(endpointRows, endpointTime))

		job, jobTime := runExport(b, store, internal.URL, from, to)
		if job.Status.RecordCount != copyRows {
			b.Fatalf("export stored %d records, COPY TO saw %d", job.Status.RecordCount, copyRows)
		}
		exportRate := rate(job.Status.RecordCount, jobTime)
		b.Logf("export into MinIO: %d rows (%.0f MB) in %s = %.0f rows/s, %.0f MB/s",
			job.Status.RecordCount, float64(job.Status.Bytes)/1e6, jobTime.Round(time.Millisecond), exportRate,
			float64(job.Status.Bytes)/1e6/jobTime.Seconds())

		// COPY once more after the export and keep the faster run: the baseline is COPY at its best.
		if again, t := copyBaseline(b, pool, from, to); rate(again, t) > rate(copyRows, copyTime) {
			copyRows, copyTime = again, t
		}
		ratio := exportRate / rate(copyRows, copyTime)
		b.ReportMetric(exportRate, "export-rows/s")
		b.ReportMetric(rate(copyRows, copyTime), "copy-rows/s")
		b.ReportMetric(ratio, "ratio")
		b.Logf("RESULT export %.0f rows/s vs COPY TO %.0f rows/s: %s", exportRate, rate(copyRows, copyTime), atLeast(ratio, 0.5))
	}
}

func rate(n int64, d time.Duration) float64 { return float64(n) / d.Seconds() }

// copyBaseline times COPY TO of the stored SOL-PERP fills of [from, to], oldest first, as the
// planner likes it and with sorts off (as the export connection runs), and returns the faster.
func copyBaseline(b *testing.B, pool *pgxpool.Pool, from, to int64) (int64, time.Duration) {
	b.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Release()
	defer conn.Exec(ctx, "RESET enable_sort")
	accounts := "'{" + strings.Join(makers(), ",") + "}'"
	sql := fmt.Sprintf(`COPY (SELECT record FROM market.fills WHERE symbol = 'SOL-PERP' AND ts >= %d AND ts <= %d
		AND (taker = ANY(%[3]s) OR maker = ANY(%[3]s)) ORDER BY ts, tx_sig, tx_sig_index) TO STDOUT`, from, to, accounts)
	var best time.Duration
	var rows int64
	for _, setting := range []string{"on", "off"} {
		if _, err := conn.Exec(ctx, "SET enable_sort = "+setting); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		tag, err := conn.Conn().PgConn().CopyTo(ctx, io.Discard, sql)
		d := time.Since(start)
		if err != nil {
			b.Fatalf("COPY TO: %v", err)
		}
		if best == 0 || d < best {
			best, rows = d, tag.RowsAffected()
		}
	}
	return rows, best
}

// readEndpoint reads the internal export route to the end, for the figure of the service alone.
func readEndpoint(b *testing.B, base string, from, to int64) (rows, size int64, d time.Duration) {
	b.Helper()
	start := time.Now()
	resp, err := http.Get(fmt.Sprintf("%s/internal/exports/market-trades?market=SOL-PERP&from=%d&to=%d&accounts=%s", base, from, to,
		strings.Join(makers(), ",")))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 256<<10)
	for {
		n, err := resp.Body.Read(buf)
		size += int64(n)
		for _, c := range buf[:n] {
			if c == '\n' {
				rows++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if resp.Trailer.Get(exportstream.RecordCountTrailer) == "" {
		b.Fatal("the export route sent no record count")
	}
	return rows - 1, size, time.Since(start)
}

// runExport runs one ExportJob to Ready with the operator's state machine and returns it with the
// time from creation to Ready.
func runExport(b *testing.B, store objstore.Store, source string, from, to int64) (*v1alpha1.ExportJob, time.Duration) {
	b.Helper()
	runner, err := local.New(export.Config{}, export.Deps{
		Store: store, Source: export.HTTPSource{Endpoints: map[v1alpha1.FileType]string{"market-trades": source}, Client: &http.Client{}},
		Logger: slog.New(slog.DiscardHandler),
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runner.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	market := "SOL-PERP"
	start := time.Now()
	job, err := runner.Create(ctx, "", v1alpha1.ExportJobSpec{
		Authority: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", FileType: "market-trades", From: from, To: to,
		Market: &market, UserPublicKeys: []v1alpha1.PublicKey{v1alpha1.PublicKey(makers()[0]), v1alpha1.PublicKey(makers()[1]), v1alpha1.PublicKey(makers()[2])},
	})
	if err != nil {
		b.Fatal(err)
	}
	for {
		got, err := runner.Get(ctx, job.Name)
		if err != nil {
			b.Fatal(err)
		}
		switch got.Status.Phase {
		case v1alpha1.PhaseReady:
			return got, time.Since(start)
		case v1alpha1.PhaseFailed, v1alpha1.PhaseCancelled:
			b.Fatalf("export %s: %s", got.Status.Phase, got.Status.FailureReason)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
