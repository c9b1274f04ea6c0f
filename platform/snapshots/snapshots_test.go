package snapshots_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/snapshots"
)

func TestPointsOf(t *testing.T) {
	now := time.Date(2026, 11, 19, 15, 30, 0, 0, time.UTC)
	hour := time.Date(2026, 11, 19, 15, 0, 0, 0, time.UTC).Unix()
	day := time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC).Unix()
	tests := []struct {
		days int
		want snapshots.Points
	}{
		{1, snapshots.Points{Start: hour - 23*3600, Width: 3600, N: 24}},
		{2, snapshots.Points{Start: day - 86400, Width: 86400, N: 2}},
		{7, snapshots.Points{Start: day - 6*86400, Width: 86400, N: 7}},
		{100, snapshots.Points{Start: day - 99*86400, Width: 86400, N: 100}},
	}
	for _, tt := range tests {
		p := snapshots.PointsOf(now, tt.days)
		if p != tt.want {
			t.Errorf("PointsOf(%d) = %+v, want %+v", tt.days, p, tt.want)
		}
		if p.Hourly() != (tt.days == 1) {
			t.Errorf("PointsOf(%d).Hourly() = %v", tt.days, p.Hourly())
		}
	}
	p := snapshots.PointsOf(now, 1)
	if p.End() != hour+3600 {
		t.Errorf("End = %d, want the end of the current hour %d", p.End(), hour+3600)
	}
	for _, c := range []struct {
		ts   int64
		i    int
		ok   bool
		what string
	}{
		{p.Start - 1, 0, false, "before"},
		{p.Start, 0, true, "first second"},
		{hour - 1, 22, true, "last second of the previous hour"},
		{now.Unix(), 23, true, "now"},
		{p.End(), 0, false, "after"},
	} {
		if i, ok := p.Index(c.ts); i != c.i || ok != c.ok {
			t.Errorf("Index(%s) = %d, %v; want %d, %v", c.what, i, ok, c.i, c.ok)
		}
	}
}

func TestDays(t *testing.T) {
	for q, want := range map[string]int{"": 7, "?days=1": 1, "?days=100": 100, "?days=": 7} {
		d, err := snapshots.Days(httptest.NewRequest("GET", "/x"+q, nil))
		if err != nil || d != want {
			t.Errorf("Days(%q) = %d, %v; want %d", q, d, err, want)
		}
	}
	for _, q := range []string{"?days=0", "?days=101", "?days=x", "?days=1.5", "?days=-1"} {
		if _, err := snapshots.Days(httptest.NewRequest("GET", "/x"+q, nil)); fault.CodeOf(err) != fault.Invalid ||
			fault.MessageOf(err) != "days must be an integer between 1 and 100" {
			t.Errorf("Days(%q) = %v, want the days message", q, err)
		}
	}
}
