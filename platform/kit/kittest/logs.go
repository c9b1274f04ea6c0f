package kittest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// Logs is where a test's logger writes: servers and consumers log from goroutines of their own while
// the test reads what they wrote, so every access holds the lock.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Lines decodes what a JSON handler wrote so far, a record a line; a line that is not JSON fails
// the test.
func (l *Logs) Lines(tb testing.TB) []map[string]any {
	tb.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// Count is how many records hold every key of want with its value (JSON numbers are float64).
func (l *Logs) Count(tb testing.TB, want map[string]any) int {
	tb.Helper()
	n := 0
	for _, rec := range l.Lines(tb) {
		if matches(rec, want) {
			n++
		}
	}
	return n
}

func matches(rec, want map[string]any) bool {
	for k, v := range want {
		if rec[k] != v {
			return false
		}
	}
	return true
}
