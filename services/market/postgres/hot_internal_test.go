package postgres

import (
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestNotificationRoundTrip: what queueNotify sends parses back to the same ranges, over as many
// notifications as the payload limit takes, symbols with spaces included.
func TestNotificationRoundTrip(t *testing.T) {
	changes := map[string]changeRange{"SOL-PERP": {1, 2}, "A B": {-5, 7}}
	for i := range 400 {
		changes[strings.Repeat("X", i%40)+"-PERP"+string(rune('a'+i%26))+strings.Repeat("y", i/26)] = changeRange{int64(i), int64(i * 60)}
	}
	var b pgx.Batch
	queueNotify(&b, "market", changes)
	if b.Len() < 2 {
		t.Fatalf("%d notifications for a payload past the limit", b.Len())
	}
	got := map[string]changeRange{}
	for _, q := range b.QueuedQueries {
		payload := "42\n" + q.Arguments[1].(string)
		if len(payload) > 8000 {
			t.Fatalf("payload of %d bytes", len(payload))
		}
		xid, c, err := parseNotification(payload)
		if err != nil || xid != 42 {
			t.Fatalf("%d %v", xid, err)
		}
		merge(got, c)
	}
	if !maps.Equal(got, changes) {
		t.Fatalf("parsed %d ranges, sent %d", len(got), len(changes))
	}
}
