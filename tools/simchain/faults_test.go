package simchain_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/txlog"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/simchain"
)

func httptestServer(tb testing.TB, c *simchain.Chain) string {
	tb.Helper()
	srv := httptest.NewServer(c.Handler())
	tb.Cleanup(srv.Close)
	return srv.URL
}

// post sends body and returns the response, its body read.
func post(tb testing.TB, ctx context.Context, url, body string) (*http.Response, []byte, error) {
	tb.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func postRaw(tb testing.TB, url, body string) []byte {
	tb.Helper()
	resp, b, err := post(tb, context.Background(), url, body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("%v %v", resp, err)
	}
	return b
}

const getSlot = `{"jsonrpc":"2.0","id":1,"method":"getSlot"}`

// statuses sends n getSlot requests and returns their HTTP statuses.
func statuses(tb testing.TB, url string, n int) []int {
	tb.Helper()
	var out []int
	for range n {
		resp, _, err := post(tb, context.Background(), url, getSlot)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, resp.StatusCode)
	}
	return out
}

// TestHTTPFaults: each HTTP fault does what it says, and is counted.
func TestHTTPFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults simchain.Faults
		check  func(t *testing.T, url string) simchain.Counts // what the counters must say
	}{
		{"rate limit", simchain.Faults{RateLimit: 5}, func(t *testing.T, url string) simchain.Counts {
			got := statuses(t, url, 12)
			limited := 0
			for _, s := range got {
				if s == http.StatusTooManyRequests {
					limited++
				}
			}
			// A burst of one second's worth passes, the rest of a quick run is refused.
			if limited < 5 || got[0] != http.StatusOK {
				t.Fatalf("statuses %v", got)
			}
			resp, _, err := post(t, context.Background(), url, getSlot)
			if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("429 without Retry-After: %v %v", resp, err)
			}
			return simchain.Counts{Requests: 13, RateLimited: int64(limited + 1)}
		}},
		{"server errors", simchain.Faults{ServerErrorEvery: 3}, func(t *testing.T, url string) simchain.Counts {
			got := statuses(t, url, 9)
			want := []int{200, 200, 500, 200, 200, 503, 200, 200, 500}
			if !slices.Equal(got, want) {
				t.Fatalf("statuses %v, want %v", got, want)
			}
			return simchain.Counts{Requests: 9, ServerErrors: 3}
		}},
		{"timeouts", simchain.Faults{TimeoutEvery: 2, TimeoutDelay: 5 * time.Second}, func(t *testing.T, url string) simchain.Counts {
			for i := range 4 {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, _, err := post(t, ctx, url, getSlot)
				cancel()
				if timedOut := errors.Is(err, context.DeadlineExceeded); timedOut != (i%2 == 1) {
					t.Fatalf("request %d: %v", i, err)
				}
			}
			return simchain.Counts{Requests: 4, TimedOut: 2}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := simchain.New(simchain.Config{})
			url := httptestServer(t, c)
			c.SetFaults(tc.faults)
			want := tc.check(t, url)
			got := c.Counts()
			got.Calls = 0
			if got != want {
				t.Errorf("counts %+v, want %+v", got, want)
			}
		})
	}
}

// TestChainFaults: skipping, truncating and dropping take exactly what they return off the chain.
func TestChainFaults(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 6, TruncatedEvery: -1}, 5)
	before := w.index(t)

	slots := w.slots(t)
	skipped := slots[len(slots)/2]
	dropped, err := w.chain.Skip(skipped)
	if err != nil || len(dropped) == 0 {
		t.Fatalf("skip %d: %d events, %v", skipped, len(dropped), err)
	}
	var b solBlock
	if r := w.call(t, &b, "getBlock", skipped, blockConfig); r.Error == nil || r.Error.Code != -32007 {
		t.Fatalf("skipped slot answers %+v", r.Error)
	}
	if slices.Contains(w.slots(t), skipped) {
		t.Fatal("getBlocks lists the skipped slot")
	}

	// A transaction of three events (a JIT maker's order, its place and the fill) keeps one.
	var cut string
	for _, m := range w.msgs {
		if m.Topic != events.TopicFills {
			continue
		}
		r, err := events.Decode(m.Topic, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.(*events.Fill); f.TxSigIndex == 2 && f.Slot != skipped {
			cut = f.TxSig
			break
		}
	}
	truncated, err := w.chain.Truncate(cut, 1)
	if err != nil || len(truncated) != 2 {
		t.Fatalf("truncate %s: %d events, %v", cut, len(truncated), err)
	}
	fill, err := w.chain.DropFill(events.MarketTypePerp, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := fill.Event.(*drift.OrderActionRecord)
	if !ok || f.Action != drift.OrderActionFill || f.MarketIndex != 0 || !f.FillRecordID.Some {
		t.Fatalf("dropped %+v", fill.Event)
	}
	if _, err := w.chain.Truncate("no such signature", 0); !errors.Is(err, simchain.ErrNoSuchTx) {
		t.Errorf("truncating an unknown transaction: %v", err)
	}

	after := w.index(t)
	gone := map[recordKey]bool{}
	for _, d := range append(append(dropped, truncated...), fill) {
		for k := range before.records {
			if k.sig == d.TxSig && k.index == d.TxSigIndex {
				gone[k] = true
			}
		}
	}
	if len(gone) != len(dropped)+len(truncated)+1 {
		t.Fatalf("%d of the %d dropped events were indexed before", len(gone), len(dropped)+len(truncated)+1)
	}
	for k, v := range before.records {
		if _, ok := after.records[k]; ok == gone[k] {
			t.Errorf("%v: dropped %v, still indexed %v (%s)", k, gone[k], ok, v)
		}
	}
	if len(after.records) != len(before.records)-len(gone) {
		t.Errorf("%d records after, %d before, %d dropped", len(after.records), len(before.records), len(gone))
	}
	if after.truncated != before.truncated+1 {
		t.Errorf("%d truncated logs, %d before the cut", after.truncated, before.truncated)
	}
	got := w.chain.Counts()
	if got.SkippedSlots != 1 || got.TruncatedTxs != 1 || got.DroppedFills != 1 {
		t.Errorf("counts %+v", got)
	}

	// A slot skipped before it is sealed never gets a block.
	c := simchain.New(simchain.Config{})
	dep := sampleDeposit(t)
	if d, err := c.Skip(dep.Slot); err != nil || len(d) != 0 {
		t.Fatalf("skip ahead: %v %v", d, err)
	}
	msg, err := events.Encode(events.TopicDeposits, dep)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Writer(nil).Write(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	c.Seal()
	if len(c.Slots()) != 0 || c.Counts().SkippedSlots != 1 {
		t.Errorf("slots %v after skipping ahead, counts %+v", c.Slots(), c.Counts())
	}
}

// TestTruncatedLogEndsAfterItsEvents: a harmless truncation cuts only text after the last event;
// a real one cuts events, and the parser says so either way.
func TestTruncatedLogEndsAfterItsEvents(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 8, TruncatedEvery: 3}, 1)
	n := 0
	for _, s := range w.slots(t) {
		for _, tx := range w.block(t, s).Transactions {
			logs := tx.Meta.LogMessages
			if logs[len(logs)-1] != "Log truncated" {
				continue
			}
			n++
			res, err := txlog.Parse(logs, tx.failed())
			if err != nil || !res.Truncated || len(res.Events) == 0 {
				t.Fatalf("%v %+v", err, res)
			}
			if before := logs[len(logs)-2]; !strings.HasPrefix(before, "Program log: ") || strings.Contains(before, "=") {
				t.Fatalf("the cut follows %q, not plain text", before)
			}
		}
	}
	if n == 0 {
		t.Fatal("no truncated log")
	}
}
