package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/tidemark/tidemark/platform/fault"
)

// DatedPageSize is the number of records on a dated page.
const DatedPageSize = 20

// maxDatedPage keeps OFFSET (page-1)*DatedPageSize far from overflow while allowing any real day or
// month of history.
const maxDatedPage = 10_000_000

// minDatedYear is the first year of protocol history the spec serves.
const minDatedYear = 2022

// QueryInt returns the integer query parameter name, def when absent or empty. A value that is not a
// base-10 integer within [min, max] is *fault.Error{Invalid, "<name> must be an integer between min and max"}.
func QueryInt(r *http.Request, name string, def, min, max int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < min || v > max {
		return 0, fault.Errorf(fault.Invalid, "%s must be an integer between %d and %d", name, min, max)
	}
	return v, nil
}

// QueryEnum returns the query parameter name, def when absent or empty; a value outside allowed
// (case-sensitive) is *fault.Error{Invalid, "<name> must be one of a, b"}.
func QueryEnum(r *http.Request, name, def string, allowed ...string) (string, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", fault.Errorf(fault.Invalid, "%s must be one of %s", name, strings.Join(allowed, ", "))
}

// PathVar returns the path variable name of the matched route ("" when absent).
func PathVar(r *http.Request, name string) string {
	return mux.Vars(r)[name]
}

// Format returns the dated endpoints' format query parameter: "json" (default) or "csv".
func Format(r *http.Request) (string, error) {
	return QueryEnum(r, "format", "json", "json", "csv")
}

// DatedPage returns the dated endpoints' page query parameter: an integer >= 1, default 1.
func DatedPage(r *http.Request) (int, error) {
	p, err := QueryInt(r, "page", 1, 1, maxDatedPage)
	return int(p), err
}

// Day is a UTC calendar day, or a whole month when Day is 0.
type Day struct {
	Year, Month, Day int
}

// Start is the first instant of the day (or month), UTC.
func (d Day) Start() time.Time {
	day := d.Day
	if day == 0 {
		day = 1
	}
	return time.Date(d.Year, time.Month(d.Month), day, 0, 0, 0, 0, time.UTC)
}

// End is the first instant after the day (or month): ranges are half-open [Start, End).
func (d Day) End() time.Time {
	if d.Day == 0 {
		return d.Start().AddDate(0, 1, 0)
	}
	return d.Start().AddDate(0, 0, 1)
}

// Label is "2026-11-21", or "2026-11" for a month; it names CSV files.
func (d Day) Label() string {
	if d.Day == 0 {
		return fmt.Sprintf("%04d-%02d", d.Year, d.Month)
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}

// ParseDatedPath reads the path variables year, month and (withDay) day and returns the half-open range
// [start, end) in unix seconds with its label. It answers *fault.Error{Invalid} for a non-integer or
// out-of-bounds segment (year >= 2022, month 1..12, day 1..31), a date that does not exist (2023-02-30)
// and a range starting after now; the current day or month is valid.
func ParseDatedPath(r *http.Request, now time.Time, withDay bool) (start, end int64, label string, err error) {
	vars := mux.Vars(r)
	var d Day
	var ok bool
	if d.Year, ok = pathInt(vars["year"]); !ok || d.Year < minDatedYear {
		return 0, 0, "", fault.Errorf(fault.Invalid, "year must be an integer >= %d", minDatedYear)
	}
	if d.Month, ok = pathInt(vars["month"]); !ok || d.Month < 1 || d.Month > 12 {
		return 0, 0, "", fault.Errorf(fault.Invalid, "month must be an integer between 1 and 12")
	}
	if withDay {
		if d.Day, ok = pathInt(vars["day"]); !ok || d.Day < 1 || d.Day > 31 {
			return 0, 0, "", fault.Errorf(fault.Invalid, "day must be an integer between 1 and 31")
		}
		// time.Date normalises Feb 30 to Mar 2: a changed day means the date does not exist.
		if d.Start().Day() != d.Day {
			return 0, 0, "", fault.Errorf(fault.Invalid, "%s is not a valid date", d.Label())
		}
	}
	if d.Start().After(now) {
		return 0, 0, "", fault.Errorf(fault.Invalid, "%s is in the future", d.Label())
	}
	return d.Start().Unix(), d.End().Unix(), d.Label(), nil
}

// pathInt parses an unsigned decimal path segment. Signs, spaces and more than 9 digits are refused so
// the value always fits an int and "+5" or "1e3" never pass as numbers.
func pathInt(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}
