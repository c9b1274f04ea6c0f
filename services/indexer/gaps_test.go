package indexer

import (
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
)

func TestFillIDsReportJumpsOnly(t *testing.T) {
	sol := Market{Type: drift.MarketTypePerp, Index: 0}
	usdc := Market{Type: drift.MarketTypeSpot, Index: 0} // the same index in the other index space
	type obs struct {
		m        Market
		id       uint64
		gap      bool
		from, to uint64
	}
	tests := []struct {
		name  string
		start map[Market]uint64
		seen  []obs
	}{
		{name: "contiguous", seen: []obs{{m: sol, id: 7}, {m: sol, id: 8}, {m: sol, id: 9}}},
		{name: "a jump", seen: []obs{{m: sol, id: 7}, {m: sol, id: 10, gap: true, from: 8, to: 9}, {m: sol, id: 11}}},
		{name: "replays say nothing", seen: []obs{{m: sol, id: 7}, {m: sol, id: 8}, {m: sol, id: 7}, {m: sol, id: 8}, {m: sol, id: 9}}},
		{name: "markets apart", seen: []obs{{m: sol, id: 7}, {m: usdc, id: 100}, {m: sol, id: 8}, {m: usdc, id: 102, gap: true, from: 101, to: 101}}},
		{name: "after a restart", start: map[Market]uint64{sol: 41},
			seen: []obs{{m: sol, id: 40}, {m: sol, id: 41}, {m: sol, id: 44, gap: true, from: 42, to: 43}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFillIDs(tt.start)
			for i, o := range tt.seen {
				gap, found := f.observe(o.m, o.id, 1, "sig")
				if found != o.gap || (found && (gap.From != o.from || gap.To != o.to || gap.Market != o.m)) {
					t.Errorf("fill %d (%v %d): gap %+v %v, want %v %d-%d", i, o.m, o.id, gap, found, o.gap, o.from, o.to)
				}
			}
			snap := f.snapshot()
			f.observe(sol, 1000, 1, "sig")
			if snap[sol] == 1000 {
				t.Error("the snapshot shares the tracker's map")
			}
		})
	}
}
