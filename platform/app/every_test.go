package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

// TestEvery calls f on each tick, with the context it runs under, and returns nil once that ends.
func TestEvery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	done := make(chan error, 1)
	go func() {
		done <- app.Every(ctx, time.Millisecond, func(c context.Context) {
			if c != ctx {
				t.Error("f runs under another context")
			}
			if calls++; calls == 3 {
				cancel()
			}
		})
	}()
	select {
	case err := <-done:
		if err != nil || calls != 3 {
			t.Fatalf("Every returned %v after %d calls, want nil after 3", err, calls)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return once its context ended")
	}
}
