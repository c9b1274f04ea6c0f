// Package exporttest is a service's internal export endpoint for tests of export drivers, with
// faults a test can switch on: refusals, server errors, streams cut short, slow streams. It speaks
// the real contract over real HTTP: a CSV header, rows, and the record-count trailer.
package exporttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/exportstream"
)

// Server streams Rows generated rows for every file type.
type Server struct {
	Rows     int
	RowDelay time.Duration // pause after every 100 rows
	Status   int           // when set, every request is answered with it and a JSON message
	Fail     int32         // the first Fail requests are answered 500
	Truncate int32         // the next Truncate requests stop halfway, without the trailer

	requests atomic.Int32
	inflight atomic.Int32
	srv      *httptest.Server
}

// Start serves s until the test ends.
func Start(tb testing.TB, s *Server) *Server {
	tb.Helper()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the server's base URL, the service's internal port.
func (s *Server) URL() string { return s.srv.URL }

// Requests is the number of export requests received.
func (s *Server) Requests() int32 { return s.requests.Load() }

// Inflight is the number of export streams open now.
func (s *Server) Inflight() int32 { return s.inflight.Load() }

// WaitInflight waits until n streams are open (0: every stream was let go).
func (s *Server) WaitInflight(tb testing.TB, n int32) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.inflight.Load() != n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d export streams open, want %d", s.inflight.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Source is an export.HTTPSource serving every file type from s.
func (s *Server) Source() export.Source {
	eps := map[v1alpha1.FileType]string{}
	for _, ft := range v1alpha1.FileTypes {
		eps[ft] = s.srv.URL
	}
	return export.HTTPSource{Endpoints: eps, Client: s.srv.Client()}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	switch {
	case s.Status != 0:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.Status)
		fmt.Fprintf(w, `{"success":false,"message":"refused with %d"}`, s.Status)
		return
	case n <= s.Fail:
		http.Error(w, "database unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Trailer", exportstream.RecordCountTrailer)
	w.Header().Set("Content-Type", "text/csv")
	fmt.Fprint(w, `"ts","txSig","n"`+"\n")
	for i := range s.Rows {
		if n <= s.Fail+s.Truncate && i == s.Rows/2 {
			return
		}
		fmt.Fprintf(w, `"%d","sig-%d","%d"`+"\n", 1_700_000_000+i, i, i)
		if s.RowDelay > 0 && i%100 == 99 {
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(s.RowDelay):
			}
		}
	}
	w.Header().Set(exportstream.RecordCountTrailer, strconv.Itoa(s.Rows))
}

// CSV is what s sends for its rows.
func (s *Server) CSV() string {
	out := `"ts","txSig","n"` + "\n"
	for i := range s.Rows {
		out += fmt.Sprintf(`"%d","sig-%d","%d"`+"\n", 1_700_000_000+i, i, i)
	}
	return out
}
