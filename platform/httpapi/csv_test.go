package httpapi_test

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"github.com/tidemark/tidemark/platform/httpapi"
)

func TestCSVWriter(t *testing.T) {
	tests := []struct {
		name string
		rows [][]string
		want string
	}{
		{"plain", [][]string{{"ts", "txSig"}, {"1", "abc"}}, "\"ts\",\"txSig\"\n\"1\",\"abc\"\n"},
		{"empty field and row", [][]string{{"", "x"}, {}}, "\"\",\"x\"\n\n"},
		{"comma", [][]string{{"a,b", "c"}}, "\"a,b\",\"c\"\n"},
		{"quotes doubled", [][]string{{`say "hi"`, `"`, `""`}}, "\"say \"\"hi\"\"\",\"\"\"\",\"\"\"\"\"\"\n"},
		{"newlines kept inside quotes", [][]string{{"line1\nline2", "cr\r\nlf"}}, "\"line1\nline2\",\"cr\r\nlf\"\n"},
		{"negative amounts untouched", [][]string{{"-1500000", "=SUM(A1)"}}, "\"-1500000\",\"=SUM(A1)\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := httpapi.NewCSVWriter(&buf)
			for _, row := range tt.rows {
				if err := w.Write(row); err != nil {
					t.Fatal(err)
				}
			}
			if buf.Len() != 0 {
				t.Errorf("unbuffered: %d bytes before Flush", buf.Len())
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tt.want {
				t.Errorf("got  %q\nwant %q", buf.String(), tt.want)
			}
		})
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCSVWriterStickyError(t *testing.T) {
	w := httpapi.NewCSVWriter(failingWriter{})
	_ = w.Write([]string{"a"})
	if err := w.Flush(); err == nil {
		t.Fatal("Flush succeeded on a failing writer")
	}
	if err := w.Write([]string{"b"}); err == nil {
		t.Fatal("Write after a failure succeeded")
	}
}

func TestCSVResponse(t *testing.T) {
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodGet, "/market/{symbol}/trades/{year}/{month}/{day}", func(r *http.Request) (any, error) {
		return httpapi.CSV{
			Filename: httpapi.CSVFilename("market", httpapi.PathVar(r, "symbol"), "trades", "2026-11-21"),
			Header:   []string{"ts", "txSig", "note"},
			Rows: [][]string{
				{"1763700000", "sig1", `with, comma and "quote"`},
				{"1763700001", "sig2", "multi\nline"},
			},
		}, nil
	})
	srv := mustServe(t, a)

	tests := []struct {
		name, symbol, wantDisposition string
	}{
		{"plain symbol", "SOL-PERP", `attachment; filename="market-SOL-PERP-trades-2026-11-21.csv"`},
		{"hostile symbol is sanitised", `a%22b%3B%20c`, `attachment; filename="market-a_b__c-trades-2026-11-21.csv"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustGet(t, srv.URL+"/market/"+tt.symbol+"/trades/2026/11/21")
			if r.status != http.StatusOK {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := r.header.Get("Content-Type"); got != "text/csv; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := r.header.Get("Content-Disposition"); got != tt.wantDisposition {
				t.Errorf("Content-Disposition = %q, want %q", got, tt.wantDisposition)
			}
			want := "\"ts\",\"txSig\",\"note\"\n" +
				"\"1763700000\",\"sig1\",\"with, comma and \"\"quote\"\"\"\n" +
				"\"1763700001\",\"sig2\",\"multi\nline\"\n"
			if r.body != want {
				t.Errorf("body = %q, want %q", r.body, want)
			}
		})
	}
}
