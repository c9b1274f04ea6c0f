package export

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
)

// Metrics are the export metrics. There are no per-job labels: jobs are many and short-lived.
// A nil *Metrics measures nothing.
type Metrics struct {
	duration *prometheus.HistogramVec
	rows     prometheus.Counter
	bytes    prometheus.Counter
	failures *prometheus.CounterVec
}

// NewMetrics registers the export metrics on reg. phases counts the jobs by phase at scrape time
// (from the driver's cache), so the gauge is right after restarts and deletions.
func NewMetrics(reg prometheus.Registerer, phases func() map[v1alpha1.Phase]int) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tidemark_export_duration_seconds",
			Help:    "Time from a job's first start to its last phase, by phase (Ready, Failed, Cancelled).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"phase"}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_export_rows_total", Help: "Records stored by completed exports.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_export_bytes_total", Help: "Bytes stored by completed exports.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_export_failures_total",
			Help: "Failed attempts (reason AttemptFailed) and failed jobs, by reason.",
		}, []string{"reason"}),
	}
	desc := prometheus.NewDesc("tidemark_export_jobs", "Export jobs by phase.", []string{"phase"}, nil)
	for _, c := range []prometheus.Collector{m.duration, m.rows, m.bytes, m.failures, phaseCollector{desc, phases}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

type phaseCollector struct {
	desc   *prometheus.Desc
	phases func() map[v1alpha1.Phase]int
}

func (c phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c phaseCollector) Collect(ch chan<- prometheus.Metric) {
	counts := c.phases()
	for _, p := range []v1alpha1.Phase{v1alpha1.PhasePending, v1alpha1.PhaseRunning, v1alpha1.PhaseReady,
		v1alpha1.PhaseFailed, v1alpha1.PhaseExpired, v1alpha1.PhaseCancelled} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[p]), string(p))
	}
}

func (m *Metrics) ready(st *v1alpha1.ExportJobStatus, records, size int64) {
	if m == nil {
		return
	}
	m.rows.Add(float64(records))
	m.bytes.Add(float64(size))
	m.finished(st, v1alpha1.PhaseReady)
}

func (m *Metrics) finished(st *v1alpha1.ExportJobStatus, phase v1alpha1.Phase) {
	if m == nil || st.StartedAt == nil || st.CompletedAt == nil {
		return
	}
	m.duration.WithLabelValues(string(phase)).Observe(st.CompletedAt.Sub(st.StartedAt.Time).Seconds())
}

func (m *Metrics) failed(reason string) {
	if m == nil {
		return
	}
	m.failures.WithLabelValues(reason).Inc()
}
