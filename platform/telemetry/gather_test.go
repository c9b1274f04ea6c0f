package telemetry_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/telemetry"
)

func TestSum(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: "c"}, []string{"topic", "code"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "g"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "h", Help: "h"})
	reg.MustRegister(c, g, h)
	c.WithLabelValues("a", "1").Add(2)
	c.WithLabelValues("a", "2").Add(3)
	c.WithLabelValues("b", "1").Add(5)
	g.Set(7)
	h.Observe(1)
	h.Observe(2)
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"every series", "c_total", nil, 10},
		{"by one label", "c_total", map[string]string{"topic": "a"}, 5},
		{"by two labels", "c_total", map[string]string{"topic": "a", "code": "2"}, 3},
		{"a label no series has", "c_total", map[string]string{"nope": "x"}, 0},
		{"a value no series has", "c_total", map[string]string{"topic": "z"}, 0},
		{"a gauge", "g", nil, 7},
		{"a histogram's observations", "h", nil, 2},
		{"absent", "none", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := telemetry.Sum(reg, tt.metric, tt.labels)
			if err != nil || got != tt.want {
				t.Errorf("Sum = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	by, err := telemetry.SumBy(reg, "c_total", "topic", map[string]string{"code": "1"})
	if err != nil || len(by) != 2 || by["a"] != 2 || by["b"] != 5 {
		t.Errorf("SumBy = %v, %v", by, err)
	}
}
