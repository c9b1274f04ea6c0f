package simchain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// Solana-shaped answers, as a client reads them.
type (
	rpcResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	solBlock struct {
		Blockhash         string  `json:"blockhash"`
		PreviousBlockhash string  `json:"previousBlockhash"`
		ParentSlot        int64   `json:"parentSlot"`
		BlockTime         *int64  `json:"blockTime"`
		BlockHeight       *uint64 `json:"blockHeight"`
		Transactions      []solTx `json:"transactions"`
	}
	solTx struct {
		Transaction struct {
			Signatures []string `json:"signatures"`
			Message    struct {
				AccountKeys []string `json:"accountKeys"`
				Header      struct {
					NumRequiredSignatures       int `json:"numRequiredSignatures"`
					NumReadonlySignedAccounts   int `json:"numReadonlySignedAccounts"`
					NumReadonlyUnsignedAccounts int `json:"numReadonlyUnsignedAccounts"`
				} `json:"header"`
				RecentBlockhash string `json:"recentBlockhash"`
				Instructions    []struct {
					ProgramIDIndex int    `json:"programIdIndex"`
					Accounts       []int  `json:"accounts"`
					Data           string `json:"data"`
				} `json:"instructions"`
			} `json:"message"`
		} `json:"transaction"`
		Meta struct {
			Err               json.RawMessage `json:"err"`
			Status            json.RawMessage `json:"status"`
			Fee               uint64          `json:"fee"`
			PreBalances       []uint64        `json:"preBalances"`
			PostBalances      []uint64        `json:"postBalances"`
			InnerInstructions []struct {
				Index        int `json:"index"`
				Instructions []struct {
					ProgramIDIndex int  `json:"programIdIndex"`
					StackHeight    *int `json:"stackHeight"`
				} `json:"instructions"`
			} `json:"innerInstructions"`
			LogMessages     []string `json:"logMessages"`
			LoadedAddresses struct {
				Writable []string `json:"writable"`
				Readonly []string `json:"readonly"`
			} `json:"loadedAddresses"`
			ComputeUnitsConsumed *uint64 `json:"computeUnitsConsumed"`
		} `json:"meta"`
		Version json.RawMessage `json:"version"`
	}
	solAccounts struct {
		Context struct {
			Slot int64 `json:"slot"`
		} `json:"context"`
		Value []*solAccount `json:"value"`
	}
	solAccount struct {
		Data       [2]string `json:"data"`
		Owner      string    `json:"owner"`
		Lamports   uint64    `json:"lamports"`
		Executable bool      `json:"executable"`
		RentEpoch  uint64    `json:"rentEpoch"`
		Space      int       `json:"space"`
	}
)

func (t *solTx) failed() bool { return len(t.Meta.Err) > 0 && string(t.Meta.Err) != "null" }

// tee keeps every message the chain's writer passes on, and the chain's input.
type tee struct {
	mu  sync.Mutex
	all []events.Message
}

func (t *tee) Write(_ context.Context, msgs ...events.Message) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.all = append(t.all, msgs...)
	return nil
}

// world is a simulated window on a chain, served on loopback.
type world struct {
	chain  *simchain.Chain
	sim    *sim.Simulator // its wallets' keys sign the transactions of the tests
	url    string
	msgs   []events.Message // everything the simulator wrote
	direct []events.Message // what the chain passed on
}

var windowStart = sim.Epoch().Add(50*time.Hour + 50*time.Minute)

// mustWorld runs the simulator over minutes from windowStart (an hour's turn inside, for the
// hourly records) into a chain, in batches as Backfill writes them, and serves it.
func mustWorld(tb testing.TB, cfg simchain.Config, minutes int) *world {
	tb.Helper()
	c := simchain.New(cfg)
	direct := &tee{}
	w := c.Writer(direct)
	s := sim.New(sim.Config{Seed: 7, Authorities: 40, FillsPerMinute: 120})
	var all, batch []events.Message
	flush := func() error {
		err := w.Write(context.Background(), batch...)
		batch = batch[:0]
		return err
	}
	err := s.Generate(windowStart, windowStart.Add(time.Duration(minutes)*time.Minute), func(m events.Message) error {
		all = append(all, m)
		batch = append(batch, m)
		if len(batch) == 500 {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		tb.Fatal(err)
	}
	c.Seal()
	srv := httptest.NewServer(c.Handler())
	tb.Cleanup(srv.Close)
	return &world{chain: c, sim: s, url: srv.URL, msgs: all, direct: direct.all}
}

// call makes one JSON-RPC call and decodes its result into out; it returns the error object.
func (w *world) call(tb testing.TB, out any, method string, params ...any) *rpcResponse {
	tb.Helper()
	return call(tb, w.url, out, method, params...)
}

func call(tb testing.TB, url string, out any, method string, params ...any) *rpcResponse {
	tb.Helper()
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		tb.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("%s: HTTP %d", method, resp.StatusCode)
	}
	var r rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		tb.Fatal(err)
	}
	if r.JSONRPC != "2.0" || string(r.ID) != "1" {
		tb.Fatalf("%s: jsonrpc %q id %s", method, r.JSONRPC, r.ID)
	}
	if r.Error == nil && out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			tb.Fatalf("%s: %v in %s", method, err, r.Result)
		}
	}
	return &r
}

// blockConfig is what the indexer asks getBlock with.
var blockConfig = map[string]any{
	"encoding": "json", "transactionDetails": "full", "maxSupportedTransactionVersion": 0,
	"rewards": false, "commitment": "finalized",
}

func (w *world) block(tb testing.TB, slot int64) *solBlock {
	tb.Helper()
	var b solBlock
	if r := w.call(tb, &b, "getBlock", slot, blockConfig); r.Error != nil {
		tb.Fatalf("getBlock %d: %d %s", slot, r.Error.Code, r.Error.Message)
	}
	return &b
}

func (w *world) slots(tb testing.TB) []int64 {
	tb.Helper()
	var tip int64
	w.call(tb, &tip, "getSlot", map[string]any{"commitment": "finalized"})
	var first int64
	w.call(tb, &first, "getFirstAvailableBlock")
	var slots []int64
	for start := first; start <= tip; start += 500_000 {
		var part []int64
		if r := w.call(tb, &part, "getBlocks", start, min(tip, start+499_999), map[string]any{"commitment": "finalized"}); r.Error != nil {
			tb.Fatalf("getBlocks: %s", r.Error.Message)
		}
		slots = append(slots, part...)
	}
	return slots
}
