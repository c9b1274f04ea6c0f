// Package monitoring declares what an operator watches of the mesh: the Grafana dashboards and the
// Prometheus alerts, with each alert's runbook and the series that must fire it and keep it quiet.
// tools/deploy writes them into the chart (dashboards as JSON files its ConfigMaps carry, the
// PrometheusRule as a template) and the README's runbooks; the tests of this package hold every
// query to the metrics a running mesh exposes and every alert to promtool.
//
// Queries are PromQL with a few $tokens, so that one text serves Grafana, the chart and the tests:
// $namespace, $service and $__rate_interval are Grafana's variables in a dashboard; in an alert,
// $namespace and $fullname are the release's, and any other $name is a threshold the chart's values
// set (prometheusRule.<name>).
package monitoring

import (
	"regexp"
	"slices"
	"strings"
)

// Dashboard is one Grafana dashboard.
type Dashboard struct {
	// UID is Grafana's id of the dashboard, and its file's name in the chart.
	UID, Title, Description string
	// Vars are the template variables its queries use besides the data source, in order.
	Vars []Var
	Rows []Row
}

// Var is a dashboard's template variable whose values are a label's values on a metric.
type Var struct {
	Name, Label, Metric string
	// Multi lets several values, or all (the regex .+), be chosen; queries match it with =~.
	Multi bool
}

// Row is a titled band of panels.
type Row struct {
	Title  string
	Panels []Panel
}

// PanelKind is how Grafana draws a panel.
type PanelKind string

const (
	TimeSeries PanelKind = "timeseries"
	Stat       PanelKind = "stat"
)

// Panel is one graph of a dashboard.
type Panel struct {
	Title, Description string
	Kind               PanelKind // TimeSeries when empty
	// Unit is Grafana's unit id: "reqps", "s", "bytes", "Bps", "percentunit", "short"...
	Unit    string
	Queries []Query
	// Quiet says why the panel's queries may return no series on a healthy mesh (a DLQ that
	// grows only when a message is refused): the tests then make the series exist, or
	// check only that the metrics do.
	Quiet string
}

// Query is a PromQL expression and its legend (Grafana's {{label}} format).
type Query struct {
	Expr, Legend string
}

// Severity is how urgently an alert needs a person.
type Severity string

const (
	// Critical: the mesh answers wrong or not at all; page.
	Critical Severity = "critical"
	// Warning: it degrades, or will; look during working hours.
	Warning Severity = "warning"
)

// Alert is one alerting rule with its runbook.
type Alert struct {
	Name     string
	Severity Severity
	// Expr is the rule's PromQL; For how long it must hold, a duration or a $threshold.
	Expr, For string
	// Summary and Description are the annotations, in Prometheus' alert templating ($labels,
	// $value); the summary names the deployable.
	Summary, Description string
	// Catches is the failure it catches, in a line: the README's list and the closing notes.
	Catches string
	Runbook Runbook
	// Fires and Quiet are promtool's unit tests: series on which the alert must fire (with the
	// labels it must fire with), and series of a healthy mesh on which it must not.
	Fires []Case
	Quiet []Case
}

// Runbook is what the README says to whoever the alert woke.
type Runbook struct {
	// Means is what fired, Causes what usually makes it, Check what to look at and Act what to do.
	Means  string
	Causes []string
	Check  []string
	Act    []string
}

// Case is a promtool test case: input series over time, and what the alert says at its end.
type Case struct {
	Name string
	// Series are promtool's input series: a selector (with $namespace, $fullname) and its values
	// in promtool's expanding notation ("0+100x60"), one sample a minute.
	Series []Series
	// Alerts are what the alert fires with at the end (none for a quiet case).
	Alerts []Fired
}

// Fired is one alert a case fires: the labels of its series (the release's namespace, its name and
// severity are added) and its summary, rendered.
type Fired struct {
	Labels  map[string]string
	Summary string
}

// Series is one promtool input series.
type Series struct{ Selector, Values string }

// Threshold is a value of the chart's prometheusRule block that an alert's expression reads.
type Threshold struct {
	Name, Default, Doc string
}

// Release is what the chart puts for an alert's $namespace and $fullname where it renders for one
// release, and the tests where they render without helm.
type Release struct{ Namespace, Fullname string }

var token = regexp.MustCompile(`\$(__)?[a-zA-Z][a-zA-Z0-9_]*`)

// Expand replaces each $token of s with what value returns for its name (without the $); a
// token value returns "" for stays as it is.
func Expand(s string, value func(name string) string) string {
	return token.ReplaceAllStringFunc(s, func(t string) string {
		if v := value(t[1:]); v != "" {
			return v
		}
		return t
	})
}

// Tokens are the names of the $tokens of s, in order of first use.
func Tokens(s string) []string {
	var out []string
	for _, t := range token.FindAllString(s, -1) {
		if !slices.Contains(out, t[1:]) {
			out = append(out, t[1:])
		}
	}
	return out
}

// Anchor is the alert's runbook's anchor in the chart README: its heading, as GitHub links it.
func (a Alert) Anchor() string { return strings.ToLower(a.Name) }

// Queries are every query of the dashboard.
func (d Dashboard) Queries() []Query {
	var out []Query
	for _, r := range d.Rows {
		for _, p := range r.Panels {
			out = append(out, p.Queries...)
		}
	}
	return out
}
