package user

import "time"

// Snapshot kinds the account routes serve, as protocol.account-snapshots names them.
const (
	SnapshotTrading = "trading"
	SnapshotEarn    = "earn"
	SnapshotVault   = "vault"
)

// MaxSnapshotDays bounds the days parameter of the snapshot routes.
const MaxSnapshotDays = 100

// SnapshotPoints are the buckets a snapshot series samples: days = 1 is the 24 hours ending with the
// current one, more is that many UTC days ending with today. The series has one point per bucket,
// [Start + i*Width, Start + (i+1)*Width) for i < N, oldest first.
type SnapshotPoints struct {
	Start, Width int64
	N            int
}

// PointsOf is the series of days (1..MaxSnapshotDays) at now.
func PointsOf(now time.Time, days int) SnapshotPoints {
	t := now.Unix()
	if days == 1 {
		return SnapshotPoints{Start: t - t%3600 - 23*3600, Width: 3600, N: 24}
	}
	return SnapshotPoints{Start: t - t%86400 - int64(days-1)*86400, Width: 86400, N: days}
}

// End is the first instant after the series.
func (p SnapshotPoints) End() int64 { return p.Start + int64(p.N)*p.Width }
