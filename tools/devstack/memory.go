package devstack

import (
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"
)

// ParseBytes reads a size as the -memory flag takes it: bytes, or a number with KiB, MiB or GiB.
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("size %q: want bytes, or a number with KiB, MiB or GiB", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatBytes writes n in MiB or GiB.
func FormatBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// heldBytes is the memory the Go runtime holds from the system, what the soft limit counts.
func heldBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
