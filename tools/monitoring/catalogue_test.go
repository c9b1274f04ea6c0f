package monitoring_test

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/tidemark/tidemark/tools/monitoring"
)

// targetLabels are the labels Prometheus puts on every series of a target the chart's
// ServiceMonitors select (Kubernetes endpoints discovery through the Prometheus Operator): the
// metrics do not carry them, the queries may use them. up is Prometheus' own series of each target.
var targetLabels = []string{"namespace", "service", "pod", "container", "endpoint", "job", "instance"}

// catalogue is what a running mesh exposes: each series name with the labels and the values of
// each label its series carry.
type catalogue map[string]map[string]map[string]bool

// scrape reads a /metrics answer (the text format) into c, the series of histograms and summaries
// under the names Prometheus stores them by.
func (c catalogue) scrape(r io.Reader) error {
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return err
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			ls := map[string]string{}
			for _, l := range m.GetLabel() {
				ls[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				c.add(name+"_count", ls)
				c.add(name+"_sum", ls)
				for _, b := range m.GetHistogram().GetBucket() {
					c.add(name+"_bucket", with(ls, "le", model.FloatString(b.GetUpperBound()).String()))
				}
				c.add(name+"_bucket", with(ls, "le", "+Inf"))
			case dto.MetricType_SUMMARY:
				c.add(name+"_count", ls)
				c.add(name+"_sum", ls)
				for _, q := range m.GetSummary().GetQuantile() {
					c.add(name, with(ls, "quantile", model.FloatString(q.GetQuantile()).String()))
				}
			default:
				c.add(name, ls)
			}
		}
	}
	return nil
}

func with(ls map[string]string, k, v string) map[string]string {
	out := maps.Clone(ls)
	out[k] = v
	return out
}

func (c catalogue) add(name string, ls map[string]string) {
	if c[name] == nil {
		c[name] = map[string]map[string]bool{}
	}
	for k, v := range ls {
		if c[name][k] == nil {
			c[name][k] = map[string]bool{}
		}
		c[name][k][v] = true
	}
}

// hasLabel reports whether the series name carry label, or Prometheus gives it to them.
func (c catalogue) hasLabel(name, label string) bool {
	return slices.Contains(targetLabels, label) || c[name][label] != nil
}

// check reports each series name, label and label value expr uses that c lacks: every selector's
// name, its matchers' labels and the values it matches exactly (but for target labels), and the
// labels of each by, without, on, ignoring and group_left or group_right among the series under it.
func (c catalogue) check(expr string) error {
	e, err := parser.ParseExpr(expr)
	if err != nil {
		return fmt.Errorf("%q does not parse: %w", expr, err)
	}
	var errs []error
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		switch n := node.(type) {
		case *parser.VectorSelector:
			name := selectorName(n)
			if name == "up" {
				// Prometheus' own series of each target: only target labels.
				for _, m := range n.LabelMatchers {
					if m.Name != labels.MetricName && !slices.Contains(targetLabels, m.Name) {
						errs = append(errs, fmt.Errorf("up has no label %s", m.Name))
					}
				}
				return nil
			}
			if c[name] == nil {
				errs = append(errs, fmt.Errorf("no series %s", name))
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name == labels.MetricName || slices.Contains(targetLabels, m.Name) {
					continue
				}
				if !c.hasLabel(name, m.Name) {
					errs = append(errs, fmt.Errorf("%s has no label %s", name, m.Name))
				} else if m.Type == labels.MatchEqual && !c[name][m.Name][m.Value] {
					errs = append(errs, fmt.Errorf("%s has no series with %s=%q (it has %v)", name, m.Name, m.Value, slices.Sorted(maps.Keys(c[name][m.Name]))))
				}
			}
		case *parser.AggregateExpr:
			errs = append(errs, c.labelsUnder(n.Expr, n.Grouping, "by/without")...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				for _, side := range []parser.Expr{n.LHS, n.RHS} {
					errs = append(errs, c.labelsUnder(side, n.VectorMatching.MatchingLabels, "on/ignoring")...)
				}
				errs = append(errs, c.labelsUnder(n.RHS, n.VectorMatching.Include, "group_left/group_right")...)
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

// labelsUnder reports each of ls that no series selected under e carries.
func (c catalogue) labelsUnder(e parser.Expr, ls []string, clause string) []error {
	var names []string
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, selectorName(vs))
		}
		return nil
	})
	var errs []error
	for _, l := range ls {
		found := false
		for _, n := range names {
			found = found || c.hasLabel(n, l)
		}
		if !found && len(names) > 0 {
			errs = append(errs, fmt.Errorf("%s %s: no label %s on %v", clause, l, l, names))
		}
	}
	return errs
}

func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName {
			return m.Value
		}
	}
	return ""
}

// dashboardValue is what the tests put for a dashboard's variables: the release's namespace, every
// service, and a rate window a few of the test Prometheus' scrapes wide.
func dashboardValue(name string) string {
	switch name {
	case "namespace":
		return release.Namespace
	case "service":
		return ".+"
	case "__rate_interval":
		return rateWindow
	}
	return ""
}

// rateWindow is $__rate_interval for the test Prometheus: several of its scrapes (scrapeInterval).
const rateWindow = "20s"

// checkDashboard reports what of d's queries and variables c lacks, but for the panels that are quiet
// on a healthy mesh when skipQuiet (their series may not exist yet).
func (c catalogue) checkDashboard(d monitoring.Dashboard, skipQuiet bool) error {
	var errs []error
	for _, v := range d.Vars {
		if err := c.check(monitoring.Expand(v.Metric, dashboardValue)); err != nil {
			errs = append(errs, fmt.Errorf("%s: variable %s: %w", d.UID, v.Name, err))
		}
		name := strings.Split(v.Metric, "{")[0]
		if !c.hasLabel(name, v.Label) {
			errs = append(errs, fmt.Errorf("%s: variable %s: %s has no label %s", d.UID, v.Name, name, v.Label))
		}
	}
	for _, r := range d.Rows {
		for _, p := range r.Panels {
			if skipQuiet && p.Quiet != "" {
				continue
			}
			for _, q := range p.Queries {
				if err := c.check(monitoring.Expand(q.Expr, dashboardValue)); err != nil {
					errs = append(errs, fmt.Errorf("%s: %s: %w", d.UID, p.Title, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkAlert reports what of a's expression c lacks.
func (c catalogue) checkAlert(a monitoring.Alert) error {
	if err := c.check(monitoring.Expand(a.Expr, release.Value)); err != nil {
		return fmt.Errorf("%s: %w", a.Name, err)
	}
	return nil
}
