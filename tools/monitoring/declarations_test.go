package monitoring_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/monitoring"
)

// TestQueriesParse: every query parses as PromQL with the tokens its dashboard or the chart gives
// it, and uses no other.
func TestQueriesParse(t *testing.T) {
	for _, d := range monitoring.Dashboards() {
		known := []string{"__rate_interval"}
		for _, v := range d.Vars {
			known = append(known, v.Name)
		}
		for _, q := range d.Queries() {
			for _, tok := range monitoring.Tokens(q.Expr) {
				if !slices.Contains(known, tok) {
					t.Errorf("%s: %q uses $%s, no variable of the dashboard", d.UID, q.Expr, tok)
				}
			}
			if _, err := parser.ParseExpr(monitoring.Expand(q.Expr, dashboardValue)); err != nil {
				t.Errorf("%s: %q: %v", d.UID, q.Expr, err)
			}
		}
	}
	for _, a := range monitoring.Alerts() {
		for _, tok := range slices.Concat(monitoring.Tokens(a.Expr), monitoring.Tokens(a.For)) {
			if release.Value(tok) == "" {
				t.Errorf("%s uses $%s, neither the release's nor a threshold", a.Name, tok)
			}
		}
		if _, err := parser.ParseExpr(monitoring.Expand(a.Expr, release.Value)); err != nil {
			t.Errorf("%s: %v", a.Name, err)
		}
	}
}

// TestDeclarationsAreComplete: names are unique; every alert has a severity, a summary naming the
// deployable, what it catches, a whole runbook and promtool cases both ways; every dashboard is JSON
// Grafana reads, with a title and panels that say what they show.
func TestDeclarationsAreComplete(t *testing.T) {
	names := map[string]bool{}
	for _, a := range monitoring.Alerts() {
		if names[a.Name] {
			t.Errorf("two alerts %s", a.Name)
		}
		names[a.Name] = true
		if a.Severity != monitoring.Critical && a.Severity != monitoring.Warning {
			t.Errorf("%s: severity %q", a.Name, a.Severity)
		}
		if !strings.Contains(a.Summary, "$labels.service") && !strings.Contains(a.Summary, "the operator") {
			t.Errorf("%s: summary %q names no deployable", a.Name, a.Summary)
		}
		r := a.Runbook
		if a.Catches == "" || a.Description == "" || r.Means == "" || len(r.Causes) == 0 || len(r.Check) == 0 || len(r.Act) == 0 {
			t.Errorf("%s: its runbook or what it catches is missing", a.Name)
		}
		if len(a.Fires) == 0 || len(a.Quiet) == 0 {
			t.Errorf("%s: no case that fires it, or none that keeps it quiet", a.Name)
		}
	}
	uids := map[string]bool{}
	for _, d := range monitoring.Dashboards() {
		if uids[d.UID] || d.Title == "" || len(d.Rows) == 0 {
			t.Errorf("dashboard %q: a second of its uid, no title or no rows", d.UID)
		}
		uids[d.UID] = true
		b, err := d.JSON()
		var v map[string]any
		if err != nil || json.Unmarshal(b, &v) != nil || v["uid"] != d.UID {
			t.Errorf("%s: JSON %v", d.UID, err)
		}
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				if p.Title == "" || p.Unit == "" || len(p.Queries) == 0 {
					t.Errorf("%s: panel %q without a title, a unit or a query", d.UID, p.Title)
				}
			}
		}
	}
}

// TestThresholdsAreValues: each threshold the alerts read is a documented key of the chart's
// prometheusRule block with the default the unit tests assume, and so is the runbook URL.
func TestThresholdsAreValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), deploy.ChartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := deploy.ValueDocs(b)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]string{}
	for _, d := range docs {
		values[d.Key] = strings.Trim(d.Default, `"`)
	}
	for _, th := range monitoring.Thresholds {
		if got, ok := values["prometheusRule."+th.Name]; !ok || got != th.Default {
			t.Errorf("values.yaml: prometheusRule.%s is %q, the alerts' default %q", th.Name, got, th.Default)
		}
	}
	if got := values["prometheusRule.runbookURL"]; got != monitoring.RunbookURL {
		t.Errorf("values.yaml: prometheusRule.runbookURL is %q, the unit tests assume %q", got, monitoring.RunbookURL)
	}
}

// TestCatalogueCatchesRenames: the check the running mesh's test makes finds a renamed metric, a
// label it lacks in a selector or a grouping, and a label value it never has.
func TestCatalogueCatchesRenames(t *testing.T) {
	c := catalogue{}
	if err := c.scrape(strings.NewReader(`# TYPE tidemark_ingest_lag gauge
tidemark_ingest_lag{service="market",topic="protocol.fills",partition="0"} 3
# TYPE tidemark_http_request_seconds histogram
tidemark_http_request_seconds_bucket{service="market",route="/x",method="GET",code="200",le="0.5"} 1
tidemark_http_request_seconds_bucket{service="market",route="/x",method="GET",code="200",le="+Inf"} 1
tidemark_http_request_seconds_sum{service="market",route="/x",method="GET",code="200"} 0.1
tidemark_http_request_seconds_count{service="market",route="/x",method="GET",code="200"} 1
`)); err != nil {
		t.Fatal(err)
	}
	for expr, ok := range map[string]bool{
		`sum by (service, topic) (tidemark_ingest_lag{namespace="x"})`:                                    true,
		`histogram_quantile(0.99, sum by (service, le) (rate(tidemark_http_request_seconds_bucket[5m])))`: true,
		`sum by (job) (up{namespace="x"})`:                                                                true,
		`sum(tidemark_ingest_lags)`:                                                                       false,
		`sum(tidemark_ingest_lag{shard="1"})`:                                                             false,
		`sum by (shard) (tidemark_ingest_lag)`:                                                            false,
		`tidemark_ingest_lag{topic="protocol.orders"}`:                                                    false,
		`tidemark_ingest_lag and on (shard) tidemark_http_request_seconds_count`:                          false,
		`histogram_quantile(0.99, sum by (le) (rate(tidemark_http_request_seconds{namespace="x"}[5m])))`:  false,
		`up{route="/x"}`: false,
	} {
		if err := c.check(expr); (err == nil) != ok {
			t.Errorf("check(%s) = %v, want ok %v", expr, err, ok)
		}
	}
}
