package snapshots_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/snapshots"
)

// TestEntry: a snapshot's entry is its ts and the fields of its kind, and nothing of the others.
func TestEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    events.AccountSnapshot
		has  string
	}{
		{"trading", events.AccountSnapshot{Kind: events.SnapshotTrading, Ts: 7, Trading: &events.TradingSnapshot{CumulativeRealizedPnl: "12"}}, `"cumulativeRealizedPnl":"12"`},
		{"earn", events.AccountSnapshot{Kind: events.SnapshotEarn, Ts: 7, Earn: &events.EarnSnapshot{}}, `"ts":7`},
		{"vault", events.AccountSnapshot{Kind: events.SnapshotVault, Ts: 7, Vault: &events.VaultSnapshot{}}, `"ts":7`},
		{"referral", events.AccountSnapshot{Kind: events.SnapshotReferral, Ts: 7, Referral: &events.ReferralSnapshot{}}, `"ts":7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := snapshots.Entry(&tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(b) || !strings.HasPrefix(string(b), `{"ts":7`) || !strings.Contains(string(b), tc.has) {
				t.Fatalf("entry %s, want ts first and %s", b, tc.has)
			}
		})
	}
	if _, err := snapshots.Entry(&events.AccountSnapshot{Kind: "other"}); err == nil {
		t.Fatal("an entry of an unknown kind")
	}
}
