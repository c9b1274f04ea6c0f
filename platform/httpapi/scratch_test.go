package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/tidemark/tidemark/platform/httpapi"
)

func TestScratchCapacity(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 4097, 25_000, 1 << 20, 1<<20 + 1, 3 << 20} {
		if b := httpapi.Scratch(context.Background(), n); len(b) != 0 || cap(b) < n {
			t.Errorf("outside a request, Scratch(%d): len %d cap %d", n, len(b), cap(b))
		}
	}
	api := httpapi.New(httpapi.Options{})
	api.Handle(http.MethodGet, "/scratch/{n}", func(r *http.Request) (any, error) {
		n, _ := strconv.Atoi(httpapi.PathVar(r, "n"))
		b := httpapi.Scratch(r.Context(), n)
		if len(b) != 0 || cap(b) < n {
			return nil, fmt.Errorf("Scratch(%d): len %d cap %d", n, len(b), cap(b))
		}
		return nil, nil
	})
	for _, n := range []int{0, 1, 4096, 4097, 25_000, 1 << 20, 1<<20 + 1} {
		rec := httptest.NewRecorder()
		api.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/scratch/"+strconv.Itoa(n), nil))
		if rec.Code != http.StatusNoContent {
			t.Errorf("n=%d: %d %s", n, rec.Code, rec.Body)
		}
	}
}

// TestScratchIsHeldUntilTheResponseIsWritten has concurrent requests each build their answer in
// scratch memory with a pattern of their own: memory handed back too early, or to two requests at
// once, would show another request's bytes in an answer.
func TestScratchIsHeldUntilTheResponseIsWritten(t *testing.T) {
	api := httpapi.New(httpapi.Options{})
	api.Handle(http.MethodGet, "/fill/{b}", func(r *http.Request) (any, error) {
		c := httpapi.PathVar(r, "b")[0]
		// Two borrowings per request, as a page read and its envelope are.
		records := append(httpapi.Scratch(r.Context(), 20_000), bytes.Repeat([]byte{c}, 20_000)...)
		body := httpapi.Scratch(r.Context(), 20_002)
		body = append(append(append(body, '"'), records...), '"')
		return httpapi.RawJSON(body), nil
	})
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := byte('a' + w)
			want := `"` + string(bytes.Repeat([]byte{c}, 20_000)) + `"`
			for range 50 {
				resp, err := http.Get(srv.URL + "/fill/" + string(c))
				if err != nil {
					t.Error(err)
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != want {
					t.Errorf("worker %c: %v, answer of %d bytes differs", c, err, len(got))
					return
				}
			}
		}()
	}
	wg.Wait()
}
