package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/rpc"
)

// endpoint answers each request with the next of its answers (the last repeats) and records the
// requests. It speaks the wire only: what the client makes of each answer is the test.
type endpoint struct {
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter)
	requests []map[string]any
	at       []time.Time
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	e.mu.Lock()
	e.requests = append(e.requests, req)
	e.at = append(e.at, time.Now())
	answer := e.answers[min(len(e.requests), len(e.answers))-1]
	e.mu.Unlock()
	answer(w)
}

func result(v string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%s}`, v) }
}

func rpcError(code int, msg string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"error":{"code":%d,"message":%q}}`, code, msg)
	}
}

func status(code int, retryAfter string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(code)
		io.WriteString(w, "slow down")
	}
}

func stall(d time.Duration) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) { time.Sleep(d); result("1")(w) }
}

func client(t *testing.T, e *endpoint, o rpc.Options) (*rpc.Client, *[]string) {
	t.Helper()
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	o.MinBackoff = cmpOr(o.MinBackoff, time.Millisecond)
	o.MaxBackoff = cmpOr(o.MaxBackoff, 5*time.Millisecond)
	var mu sync.Mutex
	codes := &[]string{}
	o.Observe = func(method, code string) {
		mu.Lock()
		defer mu.Unlock()
		*codes = append(*codes, method+" "+code)
	}
	c, err := rpc.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c, codes
}

func cmpOr(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}

func TestCallRetriesWhatPasses(t *testing.T) {
	tests := []struct {
		name    string
		answers []func(http.ResponseWriter)
		opts    rpc.Options
		want    uint64
		wantErr string
		codes   []string
	}{
		{name: "ok", answers: []func(http.ResponseWriter){result("42")}, want: 42, codes: []string{"getSlot ok"}},
		{name: "429 then ok",
			answers: []func(http.ResponseWriter){status(429, ""), status(503, ""), result("7")}, want: 7,
			codes: []string{"getSlot http_429", "getSlot http_503", "getSlot ok"}},
		{name: "node behind then ok",
			answers: []func(http.ResponseWriter){rpcError(-32005, "Node is unhealthy"), rpcError(-32014, "not yet"), result("9")}, want: 9,
			codes: []string{"getSlot -32005", "getSlot -32014", "getSlot ok"}},
		{name: "bad params are final",
			answers: []func(http.ResponseWriter){rpcError(-32602, "Invalid params"), result("1")},
			wantErr: "rpc error -32602: Invalid params", codes: []string{"getSlot -32602"}},
		{name: "a 400 is final",
			answers: []func(http.ResponseWriter){status(400, ""), result("1")},
			wantErr: "HTTP 400", codes: []string{"getSlot http_400"}},
		{name: "timeouts retried",
			answers: []func(http.ResponseWriter){stall(200 * time.Millisecond), result("3")},
			opts:    rpc.Options{Timeout: 50 * time.Millisecond}, want: 3, codes: []string{"getSlot timeout", "getSlot ok"}},
		{name: "attempts bound the retries",
			answers: []func(http.ResponseWriter){status(500, "")},
			opts:    rpc.Options{Attempts: 3}, wantErr: "HTTP 500",
			codes: []string{"getSlot http_500", "getSlot http_500", "getSlot http_500"}},
		{name: "garbage is final",
			answers: []func(http.ResponseWriter){func(w http.ResponseWriter) { io.WriteString(w, "<html>") }},
			wantErr: "undecodable answer", codes: []string{"getSlot decode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, codes := client(t, &endpoint{answers: tt.answers}, tt.opts)
			got, err := c.Slot(context.Background(), rpc.Finalized)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
			if !slices.Equal(*codes, tt.codes) {
				t.Errorf("attempts %q, want %q", *codes, tt.codes)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	e := &endpoint{answers: []func(http.ResponseWriter){status(429, "1"), result("5")}}
	c, _ := client(t, e, rpc.Options{})
	if _, err := c.Slot(context.Background(), rpc.Finalized); err != nil {
		t.Fatal(err)
	}
	if gap := e.at[1].Sub(e.at[0]); gap < 900*time.Millisecond {
		t.Errorf("asked again %v after a Retry-After of 1s", gap)
	}
}

func TestBlockTellsSkippedSlotsApart(t *testing.T) {
	for _, code := range []int{rpc.CodeSlotSkipped, rpc.CodeLongTermStorageSkipped} {
		e := &endpoint{answers: []func(http.ResponseWriter){rpcError(code, "Slot 9 was skipped")}}
		c, codes := client(t, e, rpc.Options{})
		_, err := c.Block(context.Background(), 9, rpc.Finalized)
		if !errors.Is(err, rpc.ErrSkipped) {
			t.Errorf("%d: err %v, want ErrSkipped", code, err)
		}
		if len(*codes) != 1 {
			t.Errorf("%d: %d attempts for a skipped slot", code, len(*codes))
		}
	}
}

func TestBlockReadsSignaturesErrorsAndLogs(t *testing.T) {
	e := &endpoint{answers: []func(http.ResponseWriter){result(`{"blockhash":"h","previousBlockhash":"p","parentSlot":8,"blockTime":1700000000,"blockHeight":5,
		"transactions":[{"transaction":{"signatures":["s1"],"message":{"accountKeys":[]}},"meta":{"err":null,"logMessages":["a"]},"version":0},
		{"transaction":{"signatures":["s2"]},"meta":{"err":{"InstructionError":[0,{"Custom":6001}]},"logMessages":["b"]},"version":"legacy"}]}`)}}
	c, _ := client(t, e, rpc.Options{})
	b, err := c.Block(context.Background(), 9, rpc.Finalized)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Transactions) != 2 || *b.BlockTime != 1700000000 || b.ParentSlot != 8 {
		t.Fatalf("block %+v", b)
	}
	if tx := b.Transactions[0]; tx.Signature() != "s1" || tx.Meta.Failed() || tx.Meta.LogMessages[0] != "a" {
		t.Errorf("first tx %+v", tx)
	}
	if tx := b.Transactions[1]; tx.Signature() != "s2" || !tx.Meta.Failed() {
		t.Errorf("second tx %+v", tx)
	}
	params := e.requests[0]["params"].([]any)
	opts := params[1].(map[string]any)
	if params[0].(float64) != 9 || opts["commitment"] != "finalized" || opts["maxSupportedTransactionVersion"].(float64) != 0 ||
		opts["transactionDetails"] != "full" || opts["rewards"] != false {
		t.Errorf("getBlock params %v", params)
	}
}

func TestPacing(t *testing.T) {
	e := &endpoint{answers: []func(http.ResponseWriter){result("1")}}
	c, _ := client(t, e, rpc.Options{RequestsPerSecond: 50})
	var wg sync.WaitGroup
	start := time.Now()
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if _, err := c.Slot(context.Background(), rpc.Finalized); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// 20 requests at 50 a second: the last may go no sooner than 19 intervals after the first.
	if took := time.Since(start); took < 19*20*time.Millisecond {
		t.Errorf("20 requests in %v at 50/s", took)
	}
}

func TestAccountsChunksAndKeepsOrder(t *testing.T) {
	var calls [][]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Params []any }
		_ = json.NewDecoder(r.Body).Decode(&req)
		keys := req.Params[0].([]any)
		calls = append(calls, keys)
		vals := make([]string, len(keys))
		for i, k := range keys {
			if i%3 == 2 {
				vals[i] = "null"
				continue
			}
			// data is the key's text itself, so order is checkable.
			vals[i] = fmt.Sprintf(`{"data":[%q,"base64"],"owner":"11111111111111111111111111111111","lamports":1,"executable":false,"rentEpoch":0,"space":3}`,
				b64(k.(string)))
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":%d},"value":[%s]}}`, 100+len(calls), strings.Join(vals, ","))
	}))
	defer srv.Close()
	c, err := rpc.New(rpc.Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	keys := testKeys(250)
	accounts, slot, err := c.Accounts(context.Background(), keys, rpc.Confirmed)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 3 || len(calls[0]) != 100 || len(calls[2]) != 50 {
		t.Fatalf("calls of %d, %d, %d keys", len(calls[0]), len(calls[1]), len(calls[2]))
	}
	if slot != 101 {
		t.Errorf("slot %d, want the lowest, 101", slot)
	}
	for i, a := range accounts {
		if (i%100)%3 == 2 {
			if a != nil {
				t.Errorf("account %d exists", i)
			}
			continue
		}
		if a == nil || string(a.Data) != keys[i].String() {
			t.Fatalf("account %d: %+v", i, a)
		}
	}
}
