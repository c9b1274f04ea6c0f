package snapshots

import (
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark/platform/events"
)

// Entry is the API's entry of a snapshot record, as the user and authority routes serve it: its ts
// and the fields of its kind.
func Entry(r *events.AccountSnapshot) ([]byte, error) {
	var entry any
	switch r.Kind {
	case events.SnapshotTrading:
		entry = struct {
			Ts int64 `json:"ts"`
			*events.TradingSnapshot
		}{r.Ts, r.Trading}
	case events.SnapshotEarn:
		entry = struct {
			Ts int64 `json:"ts"`
			*events.EarnSnapshot
		}{r.Ts, r.Earn}
	case events.SnapshotVault:
		entry = struct {
			Ts int64 `json:"ts"`
			*events.VaultSnapshot
		}{r.Ts, r.Vault}
	case events.SnapshotReferral:
		entry = struct {
			Ts int64 `json:"ts"`
			*events.ReferralSnapshot
		}{r.Ts, r.Referral}
	default:
		return nil, fmt.Errorf("snapshot of unknown kind %q", r.Kind)
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return b, nil
}

// TradingMetrics are an account's cumulative totals, as its latest trading snapshot's entry has them:
// the metrics of the trading snapshot routes.
type TradingMetrics struct {
	CumulativeRealizedPnl events.Amount `json:"cumulativeRealizedPnl"`
	CumulativeMakerVolume events.Amount `json:"cumulativeMakerVolume"`
	CumulativeTakerVolume events.Amount `json:"cumulativeTakerVolume"`
	CumulativeFeePaid     events.Amount `json:"cumulativeFeePaid"`
	CumulativeFeeRebate   events.Amount `json:"cumulativeFeeRebate"`
}
