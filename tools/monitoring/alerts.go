package monitoring

import "fmt"

// Thresholds are the values of the chart's prometheusRule block that the alerts read, with their
// defaults; values.yaml documents each (a test holds the two together).
var Thresholds = []Threshold{
	{"for", "10m", "How long a condition holds before the alerts that wait fire (lag, errors, latency)."},
	{"consumerLag", "100000", "Messages behind the high watermark of a service's topics, summed, that fire TidemarkConsumerLag."},
	{"consumerLagGrowth", "1000", "Lag, summed over a service's topics, below which TidemarkConsumerLagGrowing stays quiet however it grows."},
	{"errorRatio", "0.05", "Share of a service's answers that are 5xx that fires TidemarkErrorRatio."},
	{"latencyObjective", "0.5", "Seconds within which a REST group answers 99% of its requests; slower fires TidemarkLatencyObjective."},
	{"wsOverflowDisconnects", "10", "Clients the WebSocket edge cuts off for a full queue in 10 minutes that fire TidemarkWebSocketOverflowDisconnects."},
	IndexerSlotLagThreshold,
}

// Alerts are the chart's alerts, in the README's order.
func Alerts() []Alert {
	return []Alert{consumerLag, consumerLagGrowing, dlqGrowth, errorRatio, latencyObjective, notReady, targetDown,
		postgresUnreachable, wsOverflows, exportFailures, operatorNoLeader, IndexerSlotLag, IndexerFillGaps}
}

// ns is the alerts' selector of the release's series.
const ns = `namespace="$namespace"`

// lagAt is a market consumer's lag on one partition, the series most lag cases need.
func lagAt(values string) Series {
	return Series{`tidemark_ingest_lag{` + ns + `, service="market", topic="protocol.fills", partition="0"}`, values}
}

var consumerLag = Alert{
	Name: "TidemarkConsumerLag", Severity: Warning, For: "$for",
	Expr:        `sum by (namespace, service) (tidemark_ingest_lag{` + ns + `}) > $consumerLag`,
	Summary:     `{{ $labels.service }} is {{ $value }} messages behind its topics`,
	Description: "Its consumer does not keep up with the protocol's topics; its answers are behind.",
	Catches:     "a consumer far behind its topics: its answers are stale",
	Runbook: Runbook{
		Means:  "The service's consumer is more messages behind the high watermarks of its topics (summed over partitions) than `prometheusRule.consumerLag`, for `prometheusRule.for`.",
		Causes: []string{"a burst of protocol events (a backfill, a busy market)", "too few replicas or writers for the traffic", "a slow or overloaded Postgres (its batch latency rises with the lag)", "a rebalance loop: replicas joining and leaving"},
		Check:  []string{"the Mesh dashboard's *Consumer lag by service and topic*: one topic or all of them", "*Batch latency by service* and *Retries, rewinds and rebalances*: Postgres or the group", "the service's logs for `batch failed; retrying`"},
		Act:    []string{"scale the service (`<service>.replicas`, up to the topics' partitions) or raise `config.INGEST_WRITERS`", "fix Postgres if its batches are slow; the lag then drains by itself"},
	},
	Fires: []Case{{Name: "far behind", Series: []Series{lagAt("200000x30")},
		Alerts: []Fired{{Labels: map[string]string{"service": "market"}, Summary: "market is 200000 messages behind its topics"}}}},
	Quiet: []Case{{Name: "keeping up", Series: []Series{lagAt("50x30")}}},
}

var consumerLagGrowing = Alert{
	Name: "TidemarkConsumerLagGrowing", Severity: Warning, For: "30m",
	Expr: `sum by (namespace, service) (deriv(tidemark_ingest_lag{` + ns + `}[10m])) > 0
  and sum by (namespace, service) (tidemark_ingest_lag{` + ns + `}) > $consumerLagGrowth`,
	Summary:     `{{ $labels.service }} falls further behind its topics, for half an hour`,
	Description: "Its lag has grown without a pause for 30 minutes: it consumes slower than the topics fill, and will cross TidemarkConsumerLag's threshold.",
	Catches:     "a consumer slower than its topics, before its lag is large",
	Runbook: Runbook{
		Means:  "The service's summed lag has grown at every evaluation for 30 minutes and is above `prometheusRule.consumerLagGrowth`: whatever the lag is now, the consumer is slower than its topics.",
		Causes: []string{"traffic that outgrew the service's replicas or writers", "Postgres slowing down (bloat, a long transaction, disk)", "a consumer stuck retrying one batch (its lag grows, its messages consumed stay flat)"},
		Check:  []string{"*Messages consumed by service and topic* against the lag: flat consumption means a stuck consumer", "*Batch latency by service*: rising means Postgres", "the service's logs"},
		Act:    []string{"a stuck consumer: its logs name the failing batch; restart the replica once the cause is fixed", "a slow one: scale it or raise `config.INGEST_WRITERS`, or relieve Postgres"},
	},
	Fires: []Case{{Name: "growing for an hour", Series: []Series{lagAt("2000+100x60")},
		Alerts: []Fired{{Labels: map[string]string{"service": "market"}, Summary: "market falls further behind its topics, for half an hour"}}}},
	Quiet: []Case{
		{Name: "steady", Series: []Series{lagAt("5000x60")}},
		{Name: "growing but small", Series: []Series{lagAt("0+10x60")}},
	},
}

var dlqGrowth = Alert{
	Name: "TidemarkDLQGrowth", Severity: Warning,
	Expr:        `sum by (namespace, service, topic) (increase(tidemark_ingest_dlq_total{` + ns + `}[15m])) > 0`,
	Summary:     `{{ $labels.service }} sent {{ $value }} messages of {{ $labels.topic }} to its DLQ`,
	Description: "Messages that did not decode or validate went to <topic>.dlq; read them there.",
	Catches:     "messages a service refused (undecodable, invalid): their records are missing from its answers",
	Runbook: Runbook{
		Means:  "The service sent messages of the topic to `<topic>.dlq` in the last 15 minutes: they did not decode or failed validation, and their records are not in its tables.",
		Causes: []string{"a producer writing a new schema version the service does not know yet", "a malformed or truncated event from the chain front", "a record that breaks a rule of the service's validation"},
		Check:  []string{"the DLQ's messages: each carries the reason in a header (`kafka-console-consumer --topic <prefix><topic>.dlq --property print.headers=true`)", "the Mesh dashboard's *DLQ growth by service and topic*: one topic or many, one service or all of its readers"},
		Act:    []string{"a schema the service does not know: deploy the version that reads it, then replay the DLQ's messages onto the topic", "a bad producer: fix it; the refused records are lost to the service until replayed"},
	},
	Fires: []Case{{Name: "messages refused",
		Series: []Series{{`tidemark_ingest_dlq_total{` + ns + `, service="user", topic="protocol.orders"}`, "0x20 1+1x10"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "user", "topic": "protocol.orders"}, Summary: "user sent 11 messages of protocol.orders to its DLQ"}}}},
	Quiet: []Case{{Name: "none refused for long",
		Series: []Series{{`tidemark_ingest_dlq_total{` + ns + `, service="user", topic="protocol.orders"}`, "3x30"}}}},
}

// requests are a service's request counts by status code, climbing by ok and failed a minute.
func requests(service, ok, failed string) []Series {
	sel := func(code string) string {
		return `tidemark_http_request_seconds_count{` + ns + `, service="` + service + `", route="/market/{symbol}/trades", method="GET", code="` + code + `"}`
	}
	return []Series{{sel("200"), "0+" + ok + "x30"}, {sel("503"), "0+" + failed + "x30"}}
}

var errorRatio = Alert{
	Name: "TidemarkErrorRatio", Severity: Critical, For: "$for",
	Expr: `sum by (namespace, service) (rate(tidemark_http_request_seconds_count{` + ns + `, code=~"5.."}[5m]))
  / sum by (namespace, service) (rate(tidemark_http_request_seconds_count{` + ns + `}[5m])) > $errorRatio`,
	Summary:     `{{ $labels.service }} answers {{ $value | humanizePercentage }} of its requests with a 5xx`,
	Description: "503s mean its Postgres is unreachable; other 5xx are in its logs.",
	Catches:     "a service failing its clients (5xx answers)",
	Runbook: Runbook{
		Means:  "More than `prometheusRule.errorRatio` of the service's answers were 5xx over 5 minutes, for `prometheusRule.for`.",
		Causes: []string{"503: its Postgres is unreachable or refuses connections (TidemarkPostgresUnreachable fires with it)", "500: a bug; the service logs each with its stack", "504 or timeouts: queries slower than the request deadline"},
		Check:  []string{"the Mesh dashboard's *Answers by status code* and *5xx ratio by service*: which code, which routes", "the service's logs at error level"},
		Act:    []string{"503: see TidemarkPostgresUnreachable", "500: roll back the last release of the service if it started with it, and file the stack"},
	},
	Fires: []Case{{Name: "a tenth fail", Series: requests("market", "90", "10"),
		Alerts: []Fired{{Labels: map[string]string{"service": "market"}, Summary: "market answers 10% of its requests with a 5xx"}}}},
	Quiet: []Case{{Name: "one in a thousand", Series: requests("market", "999", "1")}},
}

// latencies are a REST group's request durations: n a minute, of which slow take over a second.
func latencies(service string, n, slow int) []Series {
	sel := func(le string) string {
		return `tidemark_http_request_seconds_bucket{` + ns + `, service="` + service + `", route="/user/{accountId}/trades", method="GET", code="200", le="` + le + `"}`
	}
	fast := fmt.Sprintf("0+%dx30", n-slow)
	all := fmt.Sprintf("0+%dx30", n)
	return []Series{{sel("0.1"), fast}, {sel("0.5"), fast}, {sel("1"), fast}, {sel("2.5"), all}, {sel("+Inf"), all}}
}

var latencyObjective = Alert{
	Name: "TidemarkLatencyObjective", Severity: Warning, For: "$for",
	Expr: `histogram_quantile(0.99, sum by (namespace, service, le) (rate(tidemark_http_request_seconds_bucket{` + ns + `, route!~"/internal/.*"}[5m])))
  > $latencyObjective`,
	Summary:     `{{ $labels.service }} is slower than its latency objective: p99 {{ $value | humanizeDuration }}`,
	Description: "The REST group's 99th percentile latency is over prometheusRule.latencyObjective.",
	Catches:     "a REST group slower than its latency objective",
	Runbook: Runbook{
		Means:  "The 99th percentile of the REST group's request durations (its public routes; internal ones such as export streams left out) was above `prometheusRule.latencyObjective` seconds over 5 minutes, for `prometheusRule.for`.",
		Causes: []string{"Postgres under load: the ingest batches compete with reads", "one route's queries (a wide range, a missing index) slowing the others", "too few replicas for the traffic: CPU throttled at the limit"},
		Check:  []string{"the Mesh dashboard's *Latency p99 by route*: one route or all of them", "*Batch latency by service*: a slow Postgres shows there too", "the pods' CPU against their limits"},
		Act:    []string{"one route: its query; the logs carry slow requests with their parameters", "all routes: scale the service (or autoscale it) and look at Postgres"},
	},
	Fires: []Case{{Name: "two in a hundred slow", Series: latencies("user", 100, 2),
		Alerts: []Fired{{Labels: map[string]string{"service": "user"}, Summary: "user is slower than its latency objective: p99 1.75s"}}}},
	Quiet: []Case{{Name: "fast", Series: latencies("user", 100, 0)}},
}

var notReady = Alert{
	Name: "TidemarkNotReady", Severity: Critical, For: "5m",
	Expr:        `min by (namespace, service) (tidemark_ingest_ready{` + ns + `}) == 0`,
	Summary:     `{{ $labels.service }} is not ready: a replica's consumer is out of its group or its Postgres fails`,
	Description: "A replica of it reports not ready (its /readyz answers 503 with the reasons): its answers may be stale and its endpoints drop it.",
	Catches:     "a deployable not ready: a replica out of its consumer group or without its Postgres",
	Runbook: Runbook{
		Means:  "At least one replica of the service has reported not ready for 5 minutes: its consumer has not joined its group, or its last Postgres round failed.",
		Causes: []string{"Postgres unreachable (TidemarkPostgresUnreachable says so)", "Kafka unreachable, or the consumer's credentials or ACLs refused", "a rebalance that does not settle"},
		Check:  []string{"`kubectl -n <namespace> get pods -l app.kubernetes.io/component=<service>`: which replicas are not ready", "a replica's reasons: `kubectl -n <namespace> port-forward <pod> 9090` and `curl -s localhost:9090/readyz` (503 with the reasons), or its logs"},
		Act:    []string{"fix what the reasons name (Postgres, Kafka, credentials); the replica turns ready by itself, no restart needed"},
	},
	Fires: []Case{{Name: "a replica out",
		Series: []Series{{`tidemark_ingest_ready{` + ns + `, service="stats", pod="stats-a"}`, "1x30"}, {`tidemark_ingest_ready{` + ns + `, service="stats", pod="stats-b"}`, "0x30"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "stats"}, Summary: "stats is not ready: a replica's consumer is out of its group or its Postgres fails"}}}},
	Quiet: []Case{{Name: "all ready",
		Series: []Series{{`tidemark_ingest_ready{` + ns + `, service="stats", pod="stats-a"}`, "1x30"}, {`tidemark_ingest_ready{` + ns + `, service="stats", pod="stats-b"}`, "0x5 1x25"}}}},
}

var targetDown = Alert{
	Name: "TidemarkTargetDown", Severity: Critical, For: "5m",
	Expr:        `up{` + ns + `, service=~"$fullname-.+"} == 0`,
	Summary:     `{{ $labels.service }} replica {{ $labels.pod }} does not answer its metrics scrape`,
	Description: "Prometheus cannot scrape a replica's internal port: the process is down, restarting, or unreachable.",
	Catches:     "a deployable down: a replica (the edge's and the operator's too) that does not answer at all",
	Runbook: Runbook{
		Means:  "Prometheus has failed to scrape the replica's internal port (`/metrics`) for 5 minutes. Every deployable has one, the WebSocket edge and the operator included, so this is the readiness alert of those that have no consumer.",
		Causes: []string{"the process crashed or is crash-looping (out of memory, a configuration error at start-up)", "the pod is stuck starting: migrations, or waiting for Postgres", "a NetworkPolicy that does not let the monitoring namespace in (`networkPolicy.monitoring`)"},
		Check:  []string{"`kubectl -n <namespace> get pods`: restarts, `OOMKilled`, `CrashLoopBackOff`", "`kubectl -n <namespace> logs <pod> --previous`: a configuration error names its variable"},
		Act:    []string{"fix the configuration it names, or raise its memory limit", "with NetworkPolicies on, check that Prometheus runs in a namespace `networkPolicy.monitoring.namespaceSelector` selects"},
	},
	Fires: []Case{{Name: "a replica gone",
		Series: []Series{{`up{` + ns + `, service="$fullname-ws", pod="ws-a", job="$fullname-ws"}`, "1x10 0x20"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "$fullname-ws", "pod": "ws-a", "job": "$fullname-ws"}, Summary: "tidemark-ws replica ws-a does not answer its metrics scrape"}}}},
	Quiet: []Case{{Name: "scraped", Series: []Series{
		{`up{` + ns + `, service="$fullname-ws", pod="ws-a", job="$fullname-ws"}`, "1x30"},
		// Another release's, or another application's, target in the namespace is not this release's.
		{`up{` + ns + `, service="other", pod="other-a", job="other"}`, "0x30"},
	}}},
}

var postgresUnreachable = Alert{
	Name: "TidemarkPostgresUnreachable", Severity: Critical, For: "2m",
	Expr: `max by (namespace, service) (increase(tidemark_ingest_retries_total{` + ns + `}[5m])) > 0
  and on (namespace, service) min by (namespace, service) (tidemark_ingest_ready{` + ns + `}) == 0`,
	Summary:     `{{ $labels.service }} cannot reach its Postgres: its consumer retries and it reports not ready`,
	Description: "Its batches fail and are retried, and its last Postgres round failed: it stopped ingesting, and its reads answer 503.",
	Catches:     "Postgres unreachable from a service: ingest stopped, reads answer 503",
	Runbook: Runbook{
		Means:  "The service's consumer has retried failed batches in the last 5 minutes and reports not ready, for 2 minutes: its Postgres does not answer, or refuses it. It fetches nothing more until Postgres is back, and loses nothing: the stored offsets are the truth.",
		Causes: []string{"Postgres down, failing over or restarting", "the connection limit reached (`too many clients`)", "credentials rotated without the Secret (`global.postgres.existingSecret` or the service's `database`) following", "a NetworkPolicy without `networkPolicy.egress.postgres`"},
		Check:  []string{"the service's logs: `batch failed; retrying` carries Postgres' error", "Postgres itself: is it up, what does `pg_stat_activity` hold"},
		Act:    []string{"bring Postgres back or fix the credentials; the consumer resumes from its stored offsets by itself, and re-reads what a failover lost"},
	},
	Fires: []Case{{Name: "retrying, not ready", Series: []Series{
		{`tidemark_ingest_retries_total{` + ns + `, service="authority"}`, "0x5 1+1x25"},
		{`tidemark_ingest_ready{` + ns + `, service="authority"}`, "1x5 0x25"},
	}, Alerts: []Fired{{Labels: map[string]string{"service": "authority"}, Summary: "authority cannot reach its Postgres: its consumer retries and it reports not ready"}}}},
	Quiet: []Case{{Name: "a retried batch, still ready", Series: []Series{
		{`tidemark_ingest_retries_total{` + ns + `, service="authority"}`, "0x25 1x5"},
		{`tidemark_ingest_ready{` + ns + `, service="authority"}`, "1x30"},
	}}},
}

var wsOverflows = Alert{
	Name: "TidemarkWebSocketOverflowDisconnects", Severity: Warning,
	Expr:        `sum by (namespace, service) (increase(ws_queue_overflows_total{` + ns + `}[10m])) > $wsOverflowDisconnects`,
	Summary:     `{{ $labels.service }} cut off {{ $value }} clients whose queues overflowed in 10 minutes`,
	Description: "Clients that read slower than the edge sends were disconnected (close 1008); they reconnect and resume.",
	Catches:     "the WebSocket edge cutting off many clients for full queues",
	Runbook: Runbook{
		Means:  "The WebSocket edge disconnected more than `prometheusRule.wsOverflowDisconnects` clients in 10 minutes because their queues overflowed (close code 1008): they read slower than it sends.",
		Causes: []string{"a burst of edge events (a volatile market) larger than the clients' queues", "replicas short of CPU: writes fall behind for every client", "clients on slow networks subscribed to many channels"},
		Check:  []string{"the WebSocket edge dashboard: *Queue overflows* and *Disconnects by close code* (1008) against *Messages sent* and *Slow writes*", "the ws pods' CPU against their limits"},
		Act:    []string{"replicas short of CPU: scale the edge (`ws.replicas`, or `ws.autoscaling` on connections)", "a burst: clients resume from their last seq, nothing is lost to them; raise `ws.config.WS_QUEUE_SIZE` if it recurs"},
	},
	Fires: []Case{{Name: "many cut off",
		Series: []Series{{`ws_queue_overflows_total{` + ns + `, service="ws", pod="ws-a"}`, "0+5x30"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "ws"}, Summary: "ws cut off 50 clients whose queues overflowed in 10 minutes"}}}},
	Quiet: []Case{{Name: "a few", Series: []Series{{`ws_queue_overflows_total{` + ns + `, service="ws", pod="ws-a"}`, "0x20 3x10"}}}},
}

var exportFailures = Alert{
	Name: "TidemarkExportFailures", Severity: Warning,
	Expr:        `sum by (namespace, reason) (increase(tidemark_export_failures_total{` + ns + `, reason!="AttemptFailed"}[30m])) > 0`,
	Summary:     `the operator failed {{ $value }} export jobs ({{ $labels.reason }})`,
	Description: "kubectl get exportjobs shows them; the Succeeded condition's message says why.",
	Catches:     "export jobs that failed for good",
	Runbook: Runbook{
		Means:  "The operator ended export jobs as Failed in the last 30 minutes, by reason (an attempt that failed and will be retried does not count): those users got no file.",
		Causes: []string{"`SourceRejected`: the owning service refused the export (its range or file type)", "`BackoffLimitExceeded`: every attempt failed, the service's export stream or the bucket unreachable", "`DeadlineExceeded`: the job ran past its deadline (a very large range, a slow bucket)"},
		Check:  []string{"`kubectl -n <namespace> get exportjobs`: the failed ones; `kubectl describe` shows the condition's message and the events", "the Exports dashboard's *Failures by reason* and *Duration by final phase*", "the operator's logs"},
		Act:    []string{"the bucket: its credentials (see the storage identity section) and `networkPolicy.egress.s3`", "a service's stream: TidemarkTargetDown or TidemarkPostgresUnreachable of that service", "users retry from the API once the cause is gone"},
	},
	Fires: []Case{{Name: "a job failed",
		Series: []Series{{`tidemark_export_failures_total{` + ns + `, reason="BackoffLimitExceeded"}`, "0x20 1x10"}},
		Alerts: []Fired{{Labels: map[string]string{"reason": "BackoffLimitExceeded"}, Summary: "the operator failed 1 export jobs (BackoffLimitExceeded)"}}}},
	Quiet: []Case{{Name: "attempts retried", Series: []Series{{`tidemark_export_failures_total{` + ns + `, reason="AttemptFailed"}`, "0+1x30"}}}},
}

// OperatorLease is the operator's leader election id (operator/cmd/operator), which names its Lease
// and the series of controller-runtime's leader gauge.
const OperatorLease = "exportjobs.exports.tidemark.io"

var operatorNoLeader = Alert{
	Name: "TidemarkOperatorNoLeader", Severity: Critical, For: "5m",
	Expr: `max by (namespace) (up{` + ns + `, service="$fullname-operator"}) == 1
  unless on (namespace) max by (namespace) (leader_election_master_status{` + ns + `, name="` + OperatorLease + `"}) == 1`,
	Summary:     `the operator runs without a leader: no export job advances`,
	Description: "Operator replicas are up, but none holds the leader Lease; export jobs stay Pending.",
	Catches:     "the operator without a leader: export jobs stay Pending",
	Runbook: Runbook{
		Means:  "Operator replicas answer their scrapes but none has held the leader Lease (`" + OperatorLease + "`) for 5 minutes: nothing runs export jobs, which stay Pending.",
		Causes: []string{"the operator's Role lost `leases` in `coordination.k8s.io` (`operator.rbac.rules`)", "the API server unreachable from the operator (a NetworkPolicy without `networkPolicy.egress.kubernetesAPI`)", "a Lease held by a replica that is gone, until it expires"},
		Check:  []string{"`kubectl -n <namespace> get lease " + OperatorLease + " -o yaml`: the holder and its renew time", "the operator's logs: leader election errors name the refused verb"},
		Act:    []string{"restore the Role's rules or the egress rule; a replica takes the Lease within seconds", "a stale holder: delete the Lease, the replicas elect a new one"},
	},
	Fires: []Case{{Name: "up, nobody leads", Series: []Series{
		{`up{` + ns + `, service="$fullname-operator", pod="operator-a"}`, "1x30"},
		{`up{` + ns + `, service="$fullname-operator", pod="operator-b"}`, "1x30"},
		{`leader_election_master_status{` + ns + `, service="$fullname-operator", pod="operator-a", name="` + OperatorLease + `"}`, "1x10 0x20"},
	}, Alerts: []Fired{{Labels: map[string]string{}, Summary: "the operator runs without a leader: no export job advances"}}}},
	Quiet: []Case{{Name: "one leads", Series: []Series{
		{`up{` + ns + `, service="$fullname-operator", pod="operator-a"}`, "1x30"},
		{`up{` + ns + `, service="$fullname-operator", pod="operator-b"}`, "1x30"},
		{`leader_election_master_status{` + ns + `, service="$fullname-operator", pod="operator-b", name="` + OperatorLease + `"}`, "0x10 1x20"},
	}}},
}
