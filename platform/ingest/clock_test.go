package ingest_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// TestRecordsValidateAgainstTheFetchClock: a protocol sink validates each record against the clock
// the consumer read when it fetched the message (once for many messages), and against the wall clock
// when the message carries none.
func TestRecordsValidateAgainstTheFetchClock(t *testing.T) {
	now := time.Now()
	// An hour past what the wall clock accepts: valid only for a clock read a day later.
	f := kittest.Fill(kittest.SOLPerp, now.Add(events.MaxClockSkew+time.Hour).Unix(), 1, 150_000_000, 1_000_000_000, 149_500_000)
	m, err := events.NewMessage(events.TopicFills, "0", f.EventType(), f)
	if err != nil {
		t.Fatal(err)
	}
	sink := ingest.Records[*events.Fill](events.TopicFills, nil)
	for _, tc := range []struct {
		name    string
		fetched time.Time
		valid   bool
	}{
		{"no fetch clock: the wall clock", time.Time{}, false},
		{"fetched a day later", now.Add(24 * time.Hour), true},
		{"fetched an hour earlier", now.Add(-time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sink.Decode(ingest.Message{Topic: m.Topic, Key: m.Key, Value: m.Value, Fetched: tc.fetched})
			if valid := err == nil; valid != tc.valid {
				t.Fatalf("valid = %v (%v), want %v", valid, err, tc.valid)
			}
		})
	}
}
