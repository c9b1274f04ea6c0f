package monitoring

// The indexer's dashboard and alerts. Its metrics carry the service label the kit gives every
// service (service="indexer").

// Indexer is the indexer's dashboard.
var Indexer = Dashboard{
	UID:         "tidemark-indexer",
	Title:       "tidemark / Indexer",
	Description: "The chain front: how far behind the chain's tip it reads, what it produces, the JSON-RPC errors, and the gaps and truncated logs it meets.",
	Vars:        []Var{namespaceOf("tidemark_indexer_slot_lag")},
	Rows: []Row{
		{Title: "Chain", Panels: []Panel{
			{Title: "Slot lag", Unit: "short", Description: "Slots between the chain's tip and the last checkpointed slot.",
				Queries: []Query{{`max by (service) (tidemark_indexer_slot_lag{` + inNamespace + `})`, "{{service}}"}}},
			{Title: "Tip and checkpoint", Unit: "short",
				Queries: []Query{
					{`max(tidemark_indexer_tip_slot{` + inNamespace + `})`, "tip"},
					{`max(tidemark_indexer_checkpoint_slot{` + inNamespace + `})`, "checkpoint"},
				}},
			{Title: "Blocks per second", Unit: "short",
				Queries: []Query{{`sum(rate(tidemark_indexer_blocks_total{` + inNamespace + `}[$__rate_interval]))`, "blocks/s"}}},
			{Title: "Events per second by topic", Unit: "short",
				Queries: []Query{{`sum by (topic) (rate(tidemark_indexer_events_total{` + inNamespace + `}[$__rate_interval]))`, "{{topic}}"}}},
		}},
		{Title: "Errors", Panels: []Panel{
			{Title: "RPC errors by method and code", Unit: "short",
				Quiet:   "a healthy RPC node answers every call",
				Queries: []Query{{`sum by (method, code) (increase(tidemark_rpc_requests_total{service="indexer", code!="ok", ` + inNamespace + `}[$__rate_interval]))`, "{{method}} {{code}}"}}},
			{Title: "RPC requests by method", Unit: "reqps",
				Queries: []Query{{`sum by (method) (rate(tidemark_rpc_requests_total{service="indexer", ` + inNamespace + `}[$__rate_interval]))`, "{{method}}"}}},
			{Title: "fillRecordId gaps by market", Unit: "short",
				Quiet:   "a healthy chain front sees every fill",
				Queries: []Query{{`sum by (market) (increase(tidemark_indexer_fill_gaps_total{` + inNamespace + `}[1h]))`, "{{market}}"}}},
			{Title: "Decode failures and truncated logs", Unit: "short",
				Quiet: "every event decodes and no log is cut on a healthy chain",
				Queries: []Query{
					{`sum by (event) (increase(tidemark_indexer_decode_failures_total{` + inNamespace + `}[1h]))`, "undecodable {{event}}"},
					{`sum(increase(tidemark_indexer_truncated_logs_total{` + inNamespace + `}[1h]))`, "truncated logs"},
				}},
		}},
	},
}

// IndexerSlotLagThreshold is the threshold IndexerSlotLag reads, for Thresholds.
var IndexerSlotLagThreshold = Threshold{"indexerSlotLag", "150", "Slots the indexer's checkpoint may be behind the chain's tip before TidemarkIndexerSlotLag fires (about a minute of slots)."}

// IndexerSlotLag fires when the indexer falls behind the chain.
var IndexerSlotLag = Alert{
	Name: "TidemarkIndexerSlotLag", Severity: Critical, For: "$for",
	Expr:        `max by (namespace, service) (tidemark_indexer_slot_lag{` + ns + `}) > $indexerSlotLag`,
	Summary:     `{{ $labels.service }} is {{ $value }} slots behind the chain's tip`,
	Description: "The chain front reads slower than the chain moves: every service's data is behind by as much.",
	Catches:     "the indexer behind the chain: every service's data is late",
	Runbook: Runbook{
		Means:  "The indexer's last checkpointed slot has been more than `prometheusRule.indexerSlotLag` slots behind the tip for `prometheusRule.for`.",
		Causes: []string{"the RPC node slow or rate-limiting (RPC errors rise)", "Kafka slow to accept the events", "a burst of blocks heavier than the indexer's throughput"},
		Check:  []string{"the Indexer dashboard's *RPC errors by method and code* and *Blocks per second*", "the indexer's logs"},
		Act:    []string{"an RPC node that refuses: point the indexer at another, or raise its rate limit", "Kafka: its brokers' health"},
	},
	Fires: []Case{{Name: "far behind",
		Series: []Series{{`tidemark_indexer_slot_lag{` + ns + `, service="indexer"}`, "1000x30"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "indexer"}, Summary: "indexer is 1000 slots behind the chain's tip"}}}},
	Quiet: []Case{{Name: "at the tip", Series: []Series{{`tidemark_indexer_slot_lag{` + ns + `, service="indexer"}`, "3x30"}}}},
}

// IndexerFillGaps fires when fills are missing from a market's sequence.
var IndexerFillGaps = Alert{
	Name: "TidemarkIndexerFillGaps", Severity: Critical,
	Expr:        `sum by (namespace, service, market) (increase(tidemark_indexer_fill_gaps_total{` + ns + `}[30m])) > 0`,
	Summary:     `{{ $labels.service }} found fills missing in market {{ $labels.market }} (fillRecordId gaps)`,
	Description: "A market's fillRecordId skipped numbers: fills the indexer never read are missing from every service.",
	Catches:     "fills missing from a market's fillRecordId sequence",
	Runbook: Runbook{
		Means:  "In the last 30 minutes the indexer saw a market's `fillRecordId` skip numbers: fills between them were never read, and every service that serves fills lacks them.",
		Causes: []string{"logs truncated by the chain (`Log truncated`): the truncated logs counter rises with it", "blocks skipped after RPC errors", "a restart from a checkpoint past unread blocks"},
		Check:  []string{"the Indexer dashboard's *fillRecordId gaps by market* and *Decode failures and truncated logs*", "the indexer's logs: each gap names the ids on both sides"},
		Act:    []string{"backfill the market's range of slots from the indexer's checkpoint before the gap; the services deduplicate what they already hold"},
	},
	Fires: []Case{{Name: "a gap",
		Series: []Series{{`tidemark_indexer_fill_gaps_total{` + ns + `, service="indexer", market="SOL-PERP"}`, "0x20 1x10"}},
		Alerts: []Fired{{Labels: map[string]string{"service": "indexer", "market": "SOL-PERP"}, Summary: "indexer found fills missing in market SOL-PERP (fillRecordId gaps)"}}}},
	Quiet: []Case{{Name: "no gap", Series: []Series{{`tidemark_indexer_fill_gaps_total{` + ns + `, service="indexer", market="SOL-PERP"}`, "0x30"}}}},
}
