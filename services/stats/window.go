package stats

import (
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/fault"
)

// Bucket sizes of the trading aggregates, in seconds.
const (
	Minute = int64(60)
	Hour   = int64(3600)
)

// Range is a half-open range of unix seconds [From, To).
type Range struct{ From, To int64 }

// Empty reports whether r holds no instant.
func (r Range) Empty() bool { return r.To <= r.From }

// Window is a range of whole minutes that the trading aggregates are summed over. It either ends with
// the present (Rolling) or on an hour (Hours).
type Window Range

// Rolling is the window of d ending with the minute of now (included): 24 h at minute resolution is
// the 1,440 minutes up to and including the current one.
func Rolling(now time.Time, d time.Duration) Window {
	end := floor(now.Unix(), Minute) + Minute
	return Window{From: end - int64(d/time.Second), To: end}
}

// Hours is the window of the whole hours from floor(from) to floor(to).
func Hours(from, to int64) Window { return Window{From: floor(from, Hour), To: floor(to, Hour)} }

// Split returns the hours and the minutes whose buckets make up w: the hours from the first whole one
// inside it to the end of the one it ends in, and the minutes before the first whole hour. A window
// ends with the present or on an hour, so the minutes of its last hour after its end hold no trading
// yet: the hour's bucket stands for them, one row instead of up to 59. A 24-hour window not aligned
// to the hour is 24 hour buckets and up to 59 minute buckets.
func (w Window) Split() (hours Range, minutes []Range) {
	hs, he := ceil(w.From, Hour), ceil(w.To, Hour)
	if hs > w.From {
		minutes = append(minutes, Range{w.From, min(hs, w.To)})
	}
	if hs < he {
		hours = Range{hs, he}
	}
	return hours, minutes
}

func floor(t, unit int64) int64 {
	if t < 0 {
		return -((-t + unit - 1) / unit * unit)
	}
	return t / unit * unit
}

func ceil(t, unit int64) int64 { return -floor(-t, unit) }

// MinuteOf and HourOf are the starts of ts's minute and hour.
func MinuteOf(ts int64) int64 { return floor(ts, Minute) }
func HourOf(ts int64) int64   { return floor(ts, Hour) }

// MonthOf is the first instant (unix seconds) of ts's UTC calendar month: leaderboards roll over at
// 00:00 UTC on the 1st.
func MonthOf(ts int64) int64 {
	t := time.Unix(ts, 0).UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC).Unix()
}

// MonthLabel is "2026-11" for a month's first instant.
func MonthLabel(month int64) string { return time.Unix(month, 0).UTC().Format("2006-01") }

// firstMonth is the first month of the protocol's history the API serves.
var firstMonth = time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseMonth reads a month query value ("2026-11"; "" is the month of now). Months before 2022 and
// after the current one are refused.
func ParseMonth(s string, now time.Time) (int64, error) {
	current := MonthOf(now.Unix())
	if s == "" {
		return current, nil
	}
	t, err := time.Parse("2006-01", s)
	if err != nil || len(s) != len("2006-01") {
		return 0, fault.Errorf(fault.Invalid, "month must be a UTC calendar month written YYYY-MM")
	}
	m := t.Unix()
	if t.Before(firstMonth) || m > current {
		return 0, fault.Errorf(fault.Invalid, "month must be from %s to %s", firstMonth.Format("2006-01"), MonthLabel(current))
	}
	return m, nil
}

// VolumeWindows are the rolling windows of /stats/markets/volume/{window}.
var VolumeWindows = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "30d": 30 * 24 * time.Hour}

// VolumeRange reads the startTs and endTs of /stats/markets/volume: both required, each floored to
// the hour, at least one and at most 24 hours apart after flooring.
func VolumeRange(startTs, endTs string) (Window, error) {
	start, err := seconds("startTs", startTs)
	if err != nil {
		return Window{}, err
	}
	end, err := seconds("endTs", endTs)
	if err != nil {
		return Window{}, err
	}
	if start >= end {
		return Window{}, fault.Errorf(fault.Invalid, "startTs must be less than endTs")
	}
	w := Hours(start, end)
	if span := w.To - w.From; span < Hour || span > 24*Hour {
		return Window{}, fault.Errorf(fault.Invalid, "Time range must be between 1 and 24 hours (startTs and endTs are floored to the hour)")
	}
	return w, nil
}

// maxSeconds bounds a timestamp parameter far beyond any real date, so that arithmetic on it cannot
// overflow.
const maxSeconds = 1 << 40

func seconds(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if v == "" {
		return 0, fault.Errorf(fault.Invalid, "%s is required (unix seconds)", name)
	}
	if err != nil || n < 0 || n > maxSeconds {
		return 0, fault.Errorf(fault.Invalid, "%s must be an integer between 0 and %d (unix seconds)", name, int64(maxSeconds))
	}
	return n, nil
}
