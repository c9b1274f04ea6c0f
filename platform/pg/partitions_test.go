package pg_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/pg"
)

func TestPartitions(t *testing.T) {
	at := func(s string) int64 {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.Unix()
	}
	cases := []struct {
		from, to string
		want     []string
	}{
		{"2026-11-03T00:00:00Z", "2026-11-20T00:00:00Z", []string{`"m"."fills_p202611"`}},
		{"2026-10-20T00:00:00Z", "2026-11-20T00:00:00Z", []string{`"m"."fills_p202611"`, `"m"."fills_p202610"`}},
		{"2025-12-31T23:59:59Z", "2026-02-01T00:00:00Z", []string{`"m"."fills_p202602"`, `"m"."fills_p202601"`, `"m"."fills_p202512"`}},
		{"2026-11-01T00:00:00Z", "2026-10-31T23:59:59Z", nil}, // empty range
	}
	for _, c := range cases {
		got, err := pg.Partitions("m.fills", at(c.from), at(c.to))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("Partitions(%s, %s) = %v, want %v", c.from, c.to, got, c.want)
		}
	}
}
