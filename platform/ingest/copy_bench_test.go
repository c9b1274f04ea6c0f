package ingest

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// BenchmarkEncodeFills renders 10k rows shaped like market fills (see services/market/postgres
// FillsTable) in each COPY format; the client-side cost binary format adds or saves.
func BenchmarkEncodeFills(b *testing.B) {
	const n = 10_000
	oids := []uint32{pgtype.Int8OID, pgtype.TextOID, pgtype.Int4OID, pgtype.Int8OID, pgtype.TextOID, pgtype.Int4OID,
		pgtype.TextOID, pgtype.Int8OID, pgtype.TextOID, pgtype.TextOID, pgtype.JSONOID}
	record := []byte(`{"ts":1793534400,"txSig":"` + strings.Repeat("5x", 44) + `","action":"fill","price":"123.456",` +
		`"note":"` + strings.Repeat("abcdefgh", 50) + `"}`)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{int64(1793534400 + i), fmt.Sprintf("%088d", i), int32(i % 3), int64(300_000_000 + i), "SOL-PERP", int32(0),
			"perp", int64(i), strings.Repeat("T", 44), strings.Repeat("M", 44), record}
	}
	for _, format := range []string{"text", "binary"} {
		b.Run(format, func(b *testing.B) {
			m := pgtype.NewMap()
			var size int
			for range b.N {
				e := newCopyEncoder(m, oids)
				if format == "text" {
					e.kinds = nil
				}
				n, err := io.Copy(io.Discard, newRowStream(e, rows, func(r []any) []any { return r }, false))
				if err != nil {
					b.Fatal(err)
				}
				size = int(n)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size)/n, "bytes/row")
		})
	}
}
