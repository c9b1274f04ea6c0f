package devstack

import (
	"fmt"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/tools/simchain"
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

// chainBlocks gauges the simulated chain: how many blocks it holds and the oldest one's slot, which
// the pruner moves (pruneChain).
type chainBlocks struct {
	chain        *simchain.Chain
	blocks, slot *prometheus.Desc
}

func newChainBlocks(chain *simchain.Chain) *chainBlocks {
	return &chainBlocks{chain: chain,
		blocks: prometheus.NewDesc("tidemark_devstack_chain_blocks", "Blocks the dev stack's simulated chain holds.", nil, nil),
		slot:   prometheus.NewDesc("tidemark_devstack_chain_first_slot", "The slot of the oldest block the simulated chain holds.", nil, nil)}
}

func (c *chainBlocks) Describe(ch chan<- *prometheus.Desc) { ch <- c.blocks; ch <- c.slot }

func (c *chainBlocks) Collect(ch chan<- prometheus.Metric) {
	n, first := c.chain.Kept()
	ch <- prometheus.MustNewConstMetric(c.blocks, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.slot, prometheus.GaugeValue, float64(first))
}
