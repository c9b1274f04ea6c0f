// Package snapshots is the sampling of the snapshot routes (/user/{accountId}/snapshots/...,
// /authority/{authorityId}/snapshots/...): the days parameter, and the points a series of that
// many days has. days = 1 is 24 hourly points, the hours ending with the current one; more is one
// point per UTC day, the days ending with today. Each point is the latest snapshot in its bucket,
// null where there is none, so a series always has exactly its number of points.
package snapshots

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/platform/httpapi"
)

// DefaultDays and MaxDays are the days parameter's default and maximum.
const (
	DefaultDays = 7
	MaxDays     = 100
)

// Days reads the days query parameter of r: an integer 1..MaxDays, DefaultDays when absent. Anything
// else is a fault.Invalid naming it.
func Days(r *http.Request) (int, error) {
	d, err := httpapi.QueryInt(r, "days", DefaultDays, 1, MaxDays)
	return int(d), err
}

// Points are the buckets a series samples: [Start + i*Width, Start + (i+1)*Width) for i < N, oldest
// first, in unix seconds.
type Points struct {
	Start, Width int64
	N            int
}

// PointsOf is the series of days (1..MaxDays) at now.
func PointsOf(now time.Time, days int) Points {
	t := now.Unix()
	if days == 1 {
		return Points{Start: t - t%3600 - 23*3600, Width: 3600, N: 24}
	}
	return Points{Start: t - t%86400 - int64(days-1)*86400, Width: 86400, N: days}
}

// End is the first instant after the series.
func (p Points) End() int64 { return p.Start + int64(p.N)*p.Width }

// Hourly reports whether the points are hours (days = 1) rather than UTC days.
func (p Points) Hourly() bool { return p.Width == 3600 }

// Index is the point whose bucket holds ts; ok is false when ts is outside the series.
func (p Points) Index(ts int64) (i int, ok bool) {
	if ts < p.Start || ts >= p.End() {
		return 0, false
	}
	return int((ts - p.Start) / p.Width), true
}
