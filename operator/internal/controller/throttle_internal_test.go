package controller

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestStatusThrottle: a job's status may be written again StatusInterval after its last write, as
// the reconciler's clock tells it (the one the machine also reads), not the wall clock.
func TestStatusThrottle(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := &Reconciler{clock: clk, lastWrite: map[types.UID]time.Time{}}
	const uid = types.UID("job")
	if d := r.untilWritable(uid); d != 0 {
		t.Fatalf("never written: wait %s, want 0", d)
	}
	r.wrote(uid)
	if d := r.untilWritable(uid); d != StatusInterval {
		t.Errorf("just written: wait %s, want %s", d, StatusInterval)
	}
	clk.SetTime(clk.Now().Add(StatusInterval / 4))
	if d, want := r.untilWritable(uid), StatusInterval*3/4; d != want {
		t.Errorf("a quarter later: wait %s, want %s", d, want)
	}
	clk.SetTime(clk.Now().Add(StatusInterval))
	if d := r.untilWritable(uid); d > 0 {
		t.Errorf("an interval later: wait %s, want none", d)
	}
}
