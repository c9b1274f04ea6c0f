package monitoring

import "fmt"

// LocalNamespace is the namespace label a Prometheus on a laptop gives the dev stack's series, as a
// cluster's gives a release's: the dashboards select it.
const LocalNamespace = "tidemark"

// ScrapeConfig is a Prometheus configuration's scrape_configs, on one line, that scrapes target (an
// internal port's host:port) every interval as the chart's ServiceMonitors scrape a release: the
// series keep their own service label, under LocalNamespace. In the dev stack every internal port
// serves the whole process' registry, so one target is the whole mesh.
func ScrapeConfig(target, interval string) string {
	return fmt.Sprintf(`scrape_configs: [{job_name: tidemark, scrape_interval: %s, honor_labels: true, static_configs: [{targets: [%q], labels: {namespace: %s}}]}]`,
		interval, target, LocalNamespace)
}
