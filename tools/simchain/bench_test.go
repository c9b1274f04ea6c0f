package simchain_test

import (
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/tools/simchain"
)

// BenchmarkGetBlock serves every block of a simulated window through the handler, as an indexer
// sweeping it would ask for them, and reports the events served per second.
func BenchmarkGetBlock(b *testing.B) {
	w := mustWorld(b, simchain.Config{Seed: 1}, 10)
	slots := w.slots(b)
	events := w.chain.Stats().Events
	h := w.chain.Handler()
	b.ResetTimer()
	for b.Loop() {
		for _, s := range slots {
			body := `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[` + strconv.FormatInt(s, 10) +
				`,{"encoding":"json","transactionDetails":"full","maxSupportedTransactionVersion":0,"rewards":false}]}`
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("POST", "/", strings.NewReader(body)))
			if rec.Code != 200 {
				b.Fatal(rec.Code)
			}
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
