package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Group runs long-running members together, in the manner of Prometheus' run group: the first member
// to return cancels the context of all the others, and Run waits for every one of them.
//
// Group does not handle signals: main wraps its context with
// signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM), so a signal is just the parent context
// ending, and tests stop a group the same way without sending signals to the test binary.
//
// Members must return once their context is done; returning nil then is a clean stop.
// The zero Group is ready to use; Add must not be called after Run.
type Group struct {
	members []member
}

type member struct {
	name string
	run  func(ctx context.Context) error
}

// Add registers a member; name identifies it in the error Run returns.
func (g *Group) Add(name string, run func(ctx context.Context) error) {
	g.members = append(g.members, member{name: name, run: run})
}

// Run starts every member and returns once all have returned. Its error is the cause of the stop: the
// first member's error, or "<name> stopped unexpectedly" when a member returned nil while ctx was still
// live; joined with the errors of other members that failed while stopping (context cancellation
// excepted). When ctx ends and every member stops cleanly, Run returns nil.
func (g *Group) Run(ctx context.Context) error {
	if len(g.members) == 0 {
		<-ctx.Done()
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		name string
		err  error
		// live is whether the group was still running when this member returned.
		live bool
	}
	results := make(chan result, len(g.members))
	var wg sync.WaitGroup
	for _, m := range g.members {
		wg.Go(func() {
			err := m.run(ctx)
			results <- result{name: m.name, err: err, live: ctx.Err() == nil}
		})
	}

	first := <-results
	cancel()
	wg.Wait()
	close(results)

	var errs []error
	switch {
	case first.err != nil && !first.live && errors.Is(first.err, context.Canceled):
		// Stopped by the parent context: a clean stop that happens to report it.
	case first.err != nil:
		errs = append(errs, fmt.Errorf("%s: %w", first.name, first.err))
	case first.live:
		errs = append(errs, fmt.Errorf("%s stopped unexpectedly", first.name))
	}
	for r := range results {
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
		}
	}
	return errors.Join(errs...)
}
