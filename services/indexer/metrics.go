package indexer

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/telemetry"
)

type metrics struct {
	tip, checkpoint, lag prometheus.Gauge
	blocks               prometheus.Counter
	events               *prometheus.CounterVec
	rpc                  func(method, code string)
	decodeFailures       *prometheus.CounterVec
	fillGaps             *prometheus.CounterVec
	fillGapIDs           *prometheus.CounterVec
	truncated            prometheus.Counter
	slotRetries          prometheus.Counter
	produceSeconds       prometheus.Histogram
	marketStates         prometheus.Counter
	leader               prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	gauge := func(name, help string) prometheus.Gauge {
		return telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
	}
	counter := func(name, help string) prometheus.Counter {
		return telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
	}
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
	}
	return &metrics{
		tip:        gauge("tidemark_indexer_tip_slot", "The chain's newest slot at the indexer's commitment, as last read."),
		checkpoint: gauge("tidemark_indexer_checkpoint_slot", "The last slot whose every event Kafka acknowledged."),
		lag:        gauge("tidemark_indexer_slot_lag", "Slots between the tip and the checkpoint."),
		blocks:     counter("tidemark_indexer_blocks_total", "Blocks read and written."),
		events:     counters("tidemark_indexer_events_total", "Records written, by topic.", "topic"),
		rpc:        rpc.Metrics(reg),
		decodeFailures: counters("tidemark_indexer_decode_failures_total",
			"Events (or whole logs, event=\"log\") that could not be decoded or mapped to a record, by event type.", "event"),
		fillGaps: counters("tidemark_indexer_fill_gaps_total",
			"Jumps in a market's fillRecordId: fills the indexer never saw.", "market"),
		fillGapIDs: counters("tidemark_indexer_fill_gap_ids_total",
			"fillRecordIds missing in those jumps.", "market"),
		truncated: counter("tidemark_indexer_truncated_logs_total",
			"Transactions whose log the runtime truncated: events past the cut are lost for good."),
		slotRetries: counter("tidemark_indexer_slot_retries_total",
			"Blocks read again because the read failed in a way the client does not retry itself."),
		produceSeconds: telemetry.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tidemark_indexer_produce_seconds", Help: "Time to have a batch acknowledged by Kafka and checkpointed.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		})),
		marketStates: counter("tidemark_indexer_market_states_total", "Market states read from market accounts and written."),
		leader:       gauge("tidemark_indexer_leader", "1 while this replica holds the indexing lock and indexes; 0 while it stands by."),
	}
}
