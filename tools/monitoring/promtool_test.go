package monitoring_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/tools/monitoring"
)

// TestAlertsUnderPromtool: the chart's PrometheusRule, as helm renders it, passes promtool check
// rules, and promtool's unit tests fire each alert on the series of its failure, with the labels and
// the summary declared, and keep it quiet on a healthy mesh's.
func TestAlertsUnderPromtool(t *testing.T) {
	promtool := tool(t, "promtool")
	dir := t.TempDir()
	rules := renderedRules(t, dir)
	run(t, promtool, "check", "rules", rules)
	tests, err := monitoring.UnitTests(monitoring.Alerts(), rules, release)
	if err != nil {
		t.Fatal(err)
	}
	run(t, promtool, "test", "rules", writeFile(t, dir, "tests.yaml", tests))
	if n := strings.Count(string(tests), "alertname:"); n < 2*len(monitoring.Alerts()) {
		t.Errorf("%d unit tests for %d alerts, want a firing and a quiet one each", n, len(monitoring.Alerts()))
	}
}
