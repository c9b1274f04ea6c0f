package app_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

// blocker runs until its context ends and records that it was stopped.
func blocker(stopped *atomic.Int32) func(context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		stopped.Add(1)
		return nil
	}
}

func runWithTimeout(t *testing.T, ctx context.Context, g *app.Group) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("group did not stop")
		return nil
	}
}

func TestGroup(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		member    func(context.Context) error // runs beside two blockers
		cancel    bool                        // cancel the parent context
		wantErr   string                      // "" = nil
		wantIsErr error
	}{
		{"member fails", func(context.Context) error { return boom }, false, "consumer: boom", boom},
		{"member returns early without error", func(context.Context) error { return nil }, false, "consumer stopped unexpectedly", nil},
		{"parent cancelled", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, true, "", nil},
		{"failure while stopping is reported", func(ctx context.Context) error { <-ctx.Done(); return boom }, true, "consumer: boom", boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stopped atomic.Int32
			var g app.Group
			g.Add("public", blocker(&stopped))
			g.Add("consumer", tt.member)
			g.Add("internal", blocker(&stopped))
			if tt.cancel {
				cancel()
			}
			err := runWithTimeout(t, ctx, &g)
			if stopped.Load() != 2 {
				t.Errorf("%d of 2 other members stopped", stopped.Load())
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.wantIsErr != nil && !errors.Is(err, tt.wantIsErr) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIsErr)
			}
		})
	}
}

func TestEmptyGroupWaitsForContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var g app.Group
	if err := runWithTimeout(t, ctx, &g); err != nil {
		t.Errorf("err = %v", err)
	}
}
