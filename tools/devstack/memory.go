package devstack

import (
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/kafka"
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

// brokerBytes is the gauge of what the embedded broker holds of each topic's records, on the dev
// stack's registry: the broker is the one part of `make run` whose memory follows what is produced
// rather than what the services keep, and a topic it fails to trim shows here first.
type brokerBytes struct {
	broker *kafka.Embedded
	topics []string
	desc   *prometheus.Desc
}

func newBrokerBytes(broker *kafka.Embedded, topics []string) *brokerBytes {
	return &brokerBytes{broker: broker, topics: topics, desc: prometheus.NewDesc("tidemark_devstack_broker_bytes",
		"Bytes of records the dev stack's embedded broker holds, by topic.", []string{"topic"}, nil)}
}

func (b *brokerBytes) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

func (b *brokerBytes) Collect(ch chan<- prometheus.Metric) {
	for _, t := range b.topics {
		ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, float64(b.broker.Bytes(t)), t)
	}
}
