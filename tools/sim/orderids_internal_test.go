package sim

import (
	"math"
	"strconv"
	"testing"
)

// TestLastMinuteOrderIDsFit: every id an account can take in the last minute before orderIDsEnd
// fits the program's u32, and the next minute's would not.
func TestLastMinuteOrderIDsFit(t *testing.T) {
	s := New(Config{Seed: 1, Authorities: 2})
	last := (orderIDsEnd-epoch)/60 - 1
	s.orderIDs.begin(last, s.cfg.FillsPerMinute, len(s.pop.actors))
	g := &minuteGen{s: s, m: last, start: epoch + last*60}
	a := &s.pop.actors[0]
	for n := 1; ; n++ {
		id, ok := g.orderID(a)
		if !ok {
			if n != orderIDsPerMinute+1 {
				t.Fatalf("the account ran out of ids at its %d-th order of the minute", n)
			}
			break
		}
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			t.Fatalf("order id %s of the last minute: %v", id, err)
		}
	}
	if next := (last + 1) * orderIDsPerMinute; next+orderIDsPerMinute <= math.MaxUint32 {
		t.Fatalf("orderIDsEnd is early: the next minute's ids up to %d fit", next+orderIDsPerMinute)
	}
}
