package monitoring

// Dashboards are the chart's dashboards, in the order Grafana lists them.
func Dashboards() []Dashboard { return []Dashboard{overview, edge, exports, Indexer} }

// The selectors every panel of a dashboard shares: its namespace and, on the overview, the chosen
// services. Kept as constants so that a query reads as its metric and what it does with it.
const (
	inNamespace = `namespace="$namespace"`
	ofServices  = `namespace="$namespace", service=~"$service"`
)

var namespaceOf = func(metric string) Var {
	return Var{Name: "namespace", Label: "namespace", Metric: metric}
}

var overview = Dashboard{
	UID:   "tidemark-overview",
	Title: "tidemark / Mesh",
	Description: "Each deployable's readiness, the REST groups' requests, errors and latency by route, " +
		"the consumers' lag and batches by service and topic, and the dead-letter queues.",
	Vars: []Var{
		namespaceOf("tidemark_ingest_ready"),
		{Name: "service", Label: "service", Metric: `tidemark_ingest_ready{namespace="$namespace"}`, Multi: true},
	},
	Rows: []Row{
		{Title: "Readiness", Panels: []Panel{
			{Title: "Consumers ready", Kind: Stat, Unit: "short",
				Description: "1 when the service's consumer is in its group and its last Postgres round succeeded (its /readyz); the lowest replica counts.",
				Queries:     []Query{{`min by (service) (tidemark_ingest_ready{` + ofServices + `})`, "{{service}}"}}},
			{Title: "Targets scraped", Unit: "short",
				Description: "Replicas Prometheus reaches, by scrape job: every deployable, the edge and the operator included.",
				Queries:     []Query{{`sum by (job) (up{` + inNamespace + `})`, "{{job}}"}}},
		}},
		{Title: "Memory", Panels: []Panel{
			{Title: "Resident memory by replica", Unit: "bytes",
				Description: "Each replica's resident set and its Go soft limit, 90% of its container's memory limit. Under GOGC=400 " +
					"the resident set grows towards the soft limit whatever the replica needs: the live heap says what it needs.",
				Queries: []Query{
					{`max by (job, instance) (process_resident_memory_bytes{` + inNamespace + `})`, "{{job}} {{instance}}"},
					{`max by (job) (go_gc_gomemlimit_bytes{` + inNamespace + `} < 1e18)`, "soft limit {{job}}"},
				}},
			{Title: "Live heap by replica", Unit: "bytes",
				Description: "What the last collection kept: the memory a replica needs beyond the runtime's own. Size the memory limit on its peak " +
					"(the chart's README gives it per unit of load).",
				Queries: []Query{{`max by (job, instance) (go_gc_heap_live_bytes{` + inNamespace + `})`, "{{job}} {{instance}}"}}},
		}},
		{Title: "Requests", Panels: []Panel{
			{Title: "Requests by route", Unit: "reqps",
				Queries: []Query{{`sum by (service, route) (rate(tidemark_http_request_seconds_count{` + ofServices + `}[$__rate_interval]))`, "{{service}} {{route}}"}}},
			{Title: "Answers by status code", Unit: "reqps",
				Queries: []Query{{`sum by (service, code) (rate(tidemark_http_request_seconds_count{` + ofServices + `}[$__rate_interval]))`, "{{service}} {{code}}"}}},
			{Title: "5xx ratio by service", Unit: "percentunit",
				Description: "503 means the service's Postgres is unreachable; other 5xx are in its logs.",
				Quiet:       "a healthy service answers no 5xx",
				Queries: []Query{{`sum by (service) (rate(tidemark_http_request_seconds_count{` + ofServices + `, code=~"5.."}[$__rate_interval]))
  / sum by (service) (rate(tidemark_http_request_seconds_count{` + ofServices + `}[$__rate_interval]))`, "{{service}}"}}},
			{Title: "Latency p99 by route", Unit: "s",
				Queries: []Query{{`histogram_quantile(0.99, sum by (service, route, le) (rate(tidemark_http_request_seconds_bucket{` + ofServices + `}[$__rate_interval])))`, "{{service}} {{route}}"}}},
			{Title: "Latency p50 by route", Unit: "s",
				Queries: []Query{{`histogram_quantile(0.5, sum by (service, route, le) (rate(tidemark_http_request_seconds_bucket{` + ofServices + `}[$__rate_interval])))`, "{{service}} {{route}}"}}},
			{Title: "Requests answered by another's read", Unit: "reqps",
				Description: "Identical reads in flight share one query (httpapi.Coalesce).",
				Queries:     []Query{{`sum by (service) (rate(tidemark_http_coalesced_requests_total{` + ofServices + `}[$__rate_interval]))`, "{{service}}"}}},
		}},
		{Title: "Ingest", Panels: []Panel{
			{Title: "Consumer lag by service and topic", Unit: "short",
				Description: "Messages behind the partitions' high watermarks after each commit.",
				Queries:     []Query{{`sum by (service, topic) (tidemark_ingest_lag{` + ofServices + `})`, "{{service}} {{topic}}"}}},
			{Title: "Messages consumed by service and topic", Unit: "short",
				Queries: []Query{{`sum by (service, topic) (rate(tidemark_ingest_messages_total{` + ofServices + `}[$__rate_interval]))`, "{{service}} {{topic}}"}}},
			{Title: "Batch latency by service", Unit: "s",
				Description: "Time to commit a batch to Postgres and Kafka, retries included. A batch spans the service's topics, so it has no topic of its own.",
				Queries: []Query{
					{`histogram_quantile(0.99, sum by (service, le) (rate(tidemark_ingest_batch_seconds_bucket{` + ofServices + `}[$__rate_interval])))`, "p99 {{service}}"},
					{`histogram_quantile(0.5, sum by (service, le) (rate(tidemark_ingest_batch_seconds_bucket{` + ofServices + `}[$__rate_interval])))`, "p50 {{service}}"},
				}},
			{Title: "Batch size p50 by service", Unit: "short",
				Queries: []Query{{`histogram_quantile(0.5, sum by (service, le) (rate(tidemark_ingest_batch_size_bucket{` + ofServices + `}[$__rate_interval])))`, "{{service}}"}}},
			{Title: "Retries, rewinds and rebalances", Unit: "short",
				Description: "Retries: failed batch attempts (Postgres or the DLQ). Rewinds: Postgres held less than was committed (failover, restore). Rebalances: group generations joined.",
				Queries: []Query{
					{`sum by (service) (increase(tidemark_ingest_retries_total{` + ofServices + `}[$__rate_interval]))`, "retries {{service}}"},
					{`sum by (service) (increase(tidemark_ingest_rewinds_total{` + ofServices + `}[$__rate_interval]))`, "rewinds {{service}}"},
					{`sum by (service) (increase(tidemark_ingest_group_generations_total{` + ofServices + `}[$__rate_interval]))`, "rebalances {{service}}"},
				}},
			{Title: "DLQ growth by service and topic", Unit: "short",
				Description: "Messages that did not decode or validate, sent to <topic>.dlq in the last hour.",
				Quiet:       "a message goes to a DLQ only when a service refuses it",
				Queries:     []Query{{`sum by (service, topic) (increase(tidemark_ingest_dlq_total{` + ofServices + `}[1h]))`, "{{service}} {{topic}}"}}},
		}},
		{Title: "Edge events", Panels: []Panel{
			{Title: "Edge events published by service", Unit: "short",
				Description: "What the services' outboxes published to the edge topics after their commits, and the failed attempts.",
				Queries: []Query{
					{`sum by (service) (rate(tidemark_outbox_published_total{` + ofServices + `}[$__rate_interval]))`, "published {{service}}"},
					{`sum by (service) (rate(tidemark_outbox_failures_total{` + ofServices + `}[$__rate_interval]))`, "failed {{service}}"},
				}},
		}},
	},
}

var edge = Dashboard{
	UID:         "tidemark-edge",
	Title:       "tidemark / WebSocket edge",
	Description: "The ws replicas: connections, subscriptions by channel, what they send, the clients they cut off and how fast an edge event reaches a socket.",
	Vars:        []Var{namespaceOf("ws_connections")},
	Rows: []Row{
		{Title: "Clients", Panels: []Panel{
			{Title: "Open connections by replica", Unit: "short",
				Queries: []Query{{`sum by (instance) (ws_connections{` + inNamespace + `})`, "{{instance}}"}}},
			{Title: "Subscriptions by channel", Unit: "short",
				Queries: []Query{{`sum by (channel_type) (ws_subscriptions{` + inNamespace + `})`, "{{channel_type}}"}}},
			{Title: "Messages sent", Unit: "short",
				Description: "Changes, snapshots, acknowledgements and errors written to clients, per second.",
				Queries:     []Query{{`sum(rate(ws_messages_sent_total{` + inNamespace + `}[$__rate_interval]))`, "messages/s"}}},
			{Title: "Bytes sent", Unit: "Bps",
				Queries: []Query{{`sum(rate(ws_sent_bytes_total{` + inNamespace + `}[$__rate_interval]))`, "bytes/s"}}},
		}},
		{Title: "Slow clients", Panels: []Panel{
			{Title: "Disconnects by close code", Unit: "short",
				Description: "Connections ended, by the code of their close handshake: 1000 the client closed, 1001 a replica stopped, " +
					"1006 the connection dropped without a handshake, 1008 too slow a reader (no pong, or its queue overflowed), " +
					"1009 a message too large; other: codes a client chose.",
				Queries: []Query{{`sum by (code) (increase(ws_disconnects_total{` + inNamespace + `}[$__rate_interval]))`, "{{code}}"}}},
			{Title: "Queue overflows", Unit: "short",
				Description: "Clients the edge cut off because their queue overflowed (close 1008: they read slower than it sends).",
				Queries:     []Query{{`sum(increase(ws_queue_overflows_total{` + inNamespace + `}[$__rate_interval]))`, "queue overflow"}}},
			{Title: "Slow writes", Unit: "short",
				Description: "Writes that found a client's socket full: the client got a writer of its own until its queue drained.",
				Queries:     []Query{{`sum(increase(ws_slow_writes_total{` + inNamespace + `}[$__rate_interval]))`, "slow writes"}}},
			{Title: "Client messages answered with an error", Unit: "short",
				Queries: []Query{{`sum(increase(ws_request_errors_total{` + inNamespace + `}[$__rate_interval]))`, "errors"}}},
		}},
		{Title: "Fan-out", Panels: []Panel{
			{Title: "Fan-out latency", Unit: "s",
				Description: "From an edge message's topic timestamp to its frame written to a client's socket.",
				Queries: []Query{
					{`histogram_quantile(0.99, sum by (le) (rate(ws_fanout_latency_seconds_bucket{` + inNamespace + `}[$__rate_interval])))`, "p99"},
					{`histogram_quantile(0.5, sum by (le) (rate(ws_fanout_latency_seconds_bucket{` + inNamespace + `}[$__rate_interval])))`, "p50"},
				}},
			{Title: "Edge events applied by topic", Unit: "short",
				Queries: []Query{{`sum by (topic) (rate(ws_edge_messages_total{` + inNamespace + `}[$__rate_interval]))`, "{{topic}}"}}},
			{Title: "Edge events rejected, repeated and missed", Unit: "short",
				Description: "Rejected: could not be decoded. Repeated: the channel had the seq already (an outbox republished it). Missed: a channel's seq skipped numbers.",
				Quiet:       "a healthy mesh publishes each event once, decodable and in order",
				Queries: []Query{
					{`sum by (topic) (increase(ws_edge_rejected_total{` + inNamespace + `}[1h]))`, "rejected {{topic}}"},
					{`sum by (topic) (increase(ws_edge_repeats_total{` + inNamespace + `}[1h]))`, "repeated {{topic}}"},
					{`sum by (topic) (increase(ws_edge_gaps_total{` + inNamespace + `}[1h]))`, "missed {{topic}}"},
				}},
		}},
	},
}

var exports = Dashboard{
	UID:         "tidemark-exports",
	Title:       "tidemark / Exports",
	Description: "The ExportJobs the operator runs: jobs by phase, what they store, how long they take, and why they fail.",
	Vars:        []Var{namespaceOf("tidemark_export_jobs")},
	Rows: []Row{
		{Title: "Jobs", Panels: []Panel{
			{Title: "Jobs by phase", Unit: "short",
				Queries: []Query{{`sum by (phase) (tidemark_export_jobs{` + inNamespace + `})`, "{{phase}}"}}},
			{Title: "Rows and bytes stored per hour", Unit: "short",
				Queries: []Query{
					{`sum(increase(tidemark_export_rows_total{` + inNamespace + `}[1h]))`, "rows"},
					{`sum(increase(tidemark_export_bytes_total{` + inNamespace + `}[1h]))`, "bytes"},
				}},
			{Title: "Duration by final phase", Unit: "s",
				Description: "From a job's first start to its last phase, over the last hour's jobs.",
				Queries: []Query{
					{`histogram_quantile(0.9, sum by (phase, le) (increase(tidemark_export_duration_seconds_bucket{` + inNamespace + `}[1h])))`, "p90 {{phase}}"},
					{`histogram_quantile(0.5, sum by (phase, le) (increase(tidemark_export_duration_seconds_bucket{` + inNamespace + `}[1h])))`, "p50 {{phase}}"},
				}},
			{Title: "Failures by reason", Unit: "short",
				Description: "AttemptFailed: an attempt failed and will be retried. The others end their job.",
				Quiet:       "a healthy export runs without failing",
				Queries:     []Query{{`sum by (reason) (increase(tidemark_export_failures_total{` + inNamespace + `}[1h]))`, "{{reason}}"}}},
		}},
	},
}
