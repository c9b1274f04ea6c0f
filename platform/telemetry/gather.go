package telemetry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sum is the sum of the counters or gauges called name in g whose labels include every pair of
// labels (a histogram or summary counts its observations): what a test or a bench reads of a
// process' metrics, and 0 while none has been registered.
func Sum(g prometheus.Gatherer, name string, labels map[string]string) (float64, error) {
	var sum float64
	err := each(g, name, labels, func(_ *dto.Metric, v float64) { sum += v })
	return sum, err
}

// SumBy is Sum split by the value of label: the metrics without it are left out.
func SumBy(g prometheus.Gatherer, name, label string, labels map[string]string) (map[string]float64, error) {
	out := map[string]float64{}
	err := each(g, name, labels, func(m *dto.Metric, v float64) {
		for _, l := range m.GetLabel() {
			if l.GetName() == label {
				out[l.GetValue()] += v
			}
		}
	})
	return out, err
}

// each calls f with every metric called name in g whose labels include labels, and its value.
func each(g prometheus.Gatherer, name string, labels map[string]string, f func(*dto.Metric, float64)) error {
	families, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	metrics:
		for _, m := range fam.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok {
					if v != l.GetValue() {
						continue metrics
					}
					matched++
				}
			}
			if matched < len(labels) {
				continue
			}
			f(m, m.GetCounter().GetValue()+m.GetGauge().GetValue()+float64(m.GetHistogram().GetSampleCount())+
				float64(m.GetSummary().GetSampleCount())+m.GetUntyped().GetValue())
		}
	}
	return nil
}
