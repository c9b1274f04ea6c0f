package txlog_test

import (
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// txSample is a whole transaction log of the real mainnet samples (drift's testdata, see its README;
// drifttest.Samples reads them) with the events a port of the SDK's parser found in it.
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
	txs := drifttest.Samples[txSample](t, "transactions.jsonl")
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
