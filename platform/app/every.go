package app

import (
	"context"
	"time"
)

// Every calls f at each tick of interval, the first one interval from now, until ctx ends; then it
// returns nil, so that it is a Group member (or a kit Job) as it is. It is the one loop of periodic
// upkeep: f handles its own failures (logs them, notes them for readiness), because upkeep that
// fails is tried again at the next tick rather than stopping the service.
func Every(ctx context.Context, interval time.Duration, f func(ctx context.Context)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			f(ctx)
		}
	}
}
