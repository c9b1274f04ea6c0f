package indexer

import (
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/drift"
)

// Market names a market on chain: perp and spot markets have separate index spaces.
type Market struct {
	Type  drift.MarketType
	Index uint16
}

func (m Market) String() string { return fmt.Sprintf("%s-%d", m.Type, m.Index) }

// Gap is a run of fillRecordIds a market skipped: From to To, both included, never seen.
type Gap struct {
	Market   Market
	From, To uint64
	Slot     int64 // the slot of the fill after the gap
	TxSig    string
}

// fillIDs tracks the last fillRecordId of every market. The program numbers a market's fills
// one by one, so a jump means fills the indexer never saw: a truncated log, a block an RPC
// answered without some transactions, a decoder that skipped an event. That is the protocol's
// own archiver's check. An id at or below the last is a fill read again (a replay after a crash
// that came before the checkpoint): nothing to report.
type fillIDs struct {
	last map[Market]uint64
}

func newFillIDs(last map[Market]uint64) *fillIDs {
	if last == nil {
		last = map[Market]uint64{}
	}
	return &fillIDs{last: last}
}

// observe takes the fill with id of market m and returns the gap before it, if any.
func (f *fillIDs) observe(m Market, id uint64, slot int64, txSig string) (Gap, bool) {
	last, known := f.last[m]
	if known && id <= last {
		return Gap{}, false
	}
	f.last[m] = id
	if !known || id == last+1 {
		return Gap{}, false
	}
	return Gap{Market: m, From: last + 1, To: id - 1, Slot: slot, TxSig: txSig}, true
}

// snapshot is a copy of the last ids, saved with the checkpoint so that a restart does not take
// the first fill it reads for the start of a market.
func (f *fillIDs) snapshot() map[Market]uint64 {
	out := make(map[Market]uint64, len(f.last))
	for k, v := range f.last {
		out[k] = v
	}
	return out
}
