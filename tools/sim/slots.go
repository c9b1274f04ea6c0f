package sim

import "time"

// SlotAt is the chain slot the simulator gives events at t: where an indexer of its chain starts
// to read a window that begins at t.
func SlotAt(t time.Time) int64 { return slotAt(t.Unix()) }
