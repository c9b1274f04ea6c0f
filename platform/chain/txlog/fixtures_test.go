package txlog_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// The real mainnet samples are drift's testdata (see its README): whole transaction logs with the
// events a port of the SDK's parser found in them, and event lines with their decoded values.
const testdata = "../drift/testdata/"

type txSample struct {
	Source         string          `json:"source"`
	TxSig          *string         `json:"txSig"`
	LogMessages    []string        `json:"logMessages"`
	ExpectedEvents []expectedEvent `json:"expectedEvents"`
}

type expectedEvent struct {
	Event      string `json:"event"`
	TxSigIndex int    `json:"txSigIndex"`
	LogIndex   int    `json:"logIndex"`
	Prefix     string `json:"prefix"`
}

type eventSample struct {
	Prefix string `json:"prefix"`
	Line   string `json:"line"`
	Event  string `json:"event"`
}

// MustReadJSONL reads a JSON Lines file of drift's testdata.
func MustReadJSONL[T any](tb testing.TB, name string) []T {
	tb.Helper()
	f, err := os.Open(testdata + name)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// MustParse parses a log that must parse.
func MustParse(tb testing.TB, logMessages []string) txlog.Result {
	tb.Helper()
	r, err := txlog.Parse(logMessages, false)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// summary is what the fixtures record of an event.
func summary(r txlog.Result) []expectedEvent {
	out := []expectedEvent{}
	for _, e := range r.Events {
		out = append(out, expectedEvent{e.EventName(), e.TxSigIndex, e.LogIndex, e.Prefix.String()})
	}
	return out
}

func TestTransactions(t *testing.T) {
	txs := MustReadJSONL[txSample](t, "transactions.jsonl")
	if len(txs) != 5 {
		t.Fatalf("%d transactions, want 5", len(txs))
	}
	for _, tx := range txs {
		t.Run(tx.Source, func(t *testing.T) {
			r := MustParse(t, tx.LogMessages)
			got, want := summary(r), tx.ExpectedEvents
			if want == nil {
				want = []expectedEvent{}
			}
			if len(got) != len(want) {
				t.Fatalf("%d events %v, want %d %v", len(got), got, len(want), want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("event %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			if r.Truncated || r.VaultEvents != 0 {
				t.Errorf("truncated %v, %d vault events; want neither", r.Truncated, r.VaultEvents)
			}
			// A failed transaction's events never happened.
			if r, err := txlog.Parse(tx.LogMessages, true); err != nil || len(r.Events) != 0 || r.Truncated {
				t.Errorf("failed: %+v, %v; want nothing", r, err)
			}
		})
	}
}
