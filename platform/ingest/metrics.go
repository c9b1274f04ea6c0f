package ingest

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/telemetry"
)

type metrics struct {
	messages     *prometheus.CounterVec
	dlq          *prometheus.CounterVec
	batchSize    prometheus.Histogram
	batchSeconds prometheus.Histogram
	lag          *prometheus.GaugeVec
	ready        prometheus.Gauge
	retries      prometheus.Counter
	replayed     prometheus.Counter
	generations  prometheus.Counter
	rewinds      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_ingest_messages_total",
			Help: "Messages consumed and committed, including those sent to the DLQ.",
		}, []string{"topic"}),
		dlq: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_ingest_dlq_total",
			Help: "Messages that failed to decode or validate and went to <topic>.dlq.",
		}, []string{"topic"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidemark_ingest_batch_size",
			Help:    "Messages per committed batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		batchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidemark_ingest_batch_seconds",
			Help:    "Time to commit a batch to Postgres and Kafka, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidemark_ingest_lag",
			Help: "Messages behind the partition's high watermark after the last commit.",
		}, []string{"topic", "partition"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tidemark_ingest_ready",
			Help: "1 when the consumer has joined its group and its last Postgres round succeeded.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_ingest_retries_total",
			Help: "Failed batch attempts (Postgres or DLQ errors) that were retried.",
		}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_ingest_replayed_total",
			Help: "Messages consumed again after a restart and skipped because their offsets were already stored.",
		}),
		generations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_ingest_group_generations_total",
			Help: "Consumer group generations joined: one at start, one more after each rebalance.",
		}),
		rewinds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_ingest_rewinds_total",
			Help: "Times Postgres was found to store less than this consumer committed (failover, restore) and the partitions were read again from the stored offsets.",
		}),
	}
	m.messages = telemetry.Register(reg, m.messages)
	m.dlq = telemetry.Register(reg, m.dlq)
	m.batchSize = telemetry.Register(reg, m.batchSize)
	m.batchSeconds = telemetry.Register(reg, m.batchSeconds)
	m.lag = telemetry.Register(reg, m.lag)
	m.ready = telemetry.Register(reg, m.ready)
	m.retries = telemetry.Register(reg, m.retries)
	m.replayed = telemetry.Register(reg, m.replayed)
	m.generations = telemetry.Register(reg, m.generations)
	m.rewinds = telemetry.Register(reg, m.rewinds)
	return m
}

func (m *metrics) setReady(ready bool) {
	if ready {
		m.ready.Set(1)
	} else {
		m.ready.Set(0)
	}
}
