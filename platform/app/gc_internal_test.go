package app

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestTuneGC: without GOGC the target is DefaultGOGC, and without GOMEMLIMIT the soft limit is 90% of
// the container's; what the environment sets is left as the runtime applied it, and no container
// limit ("max", or none to read) leaves the soft limit alone.
func TestTuneGC(t *testing.T) {
	prevGC, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(prevGC); debug.SetMemoryLimit(prevLimit) })
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	limited, unlimited := file("limited", "1073741824\n"), file("unlimited", "max\n")
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	tests := []struct {
		name      string
		vars      map[string]string
		files     []string
		wantGC    int
		wantLimit int64
	}{
		{"defaults in a container", nil, []string{limited}, DefaultGOGC, 1073741824 * 9 / 10},
		{"no container limit", nil, []string{unlimited}, DefaultGOGC, math.MaxInt64},
		{"no cgroup file", nil, []string{filepath.Join(dir, "absent")}, DefaultGOGC, math.MaxInt64},
		{"cgroup v1 after a missing v2", nil, []string{filepath.Join(dir, "absent"), limited}, DefaultGOGC, 1073741824 * 9 / 10},
		{"both set by the environment", map[string]string{"GOGC": "150", "GOMEMLIMIT": "1GiB"}, []string{limited}, 100, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			tuneGC(env(tt.vars), tt.files)
			if got := debug.SetGCPercent(100); got != tt.wantGC {
				t.Errorf("GC target %d, want %d", got, tt.wantGC)
			}
			if got := debug.SetMemoryLimit(-1); got != tt.wantLimit {
				t.Errorf("memory limit %d, want %d", got, tt.wantLimit)
			}
		})
	}
}
