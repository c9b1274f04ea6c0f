// Package mesh is the registry of tidemark's deployables: for each, its name and kind, its main
// package, the public path prefixes the edge routes to it, the internal routes it serves to the rest
// of the mesh and the ones it reads from others, and the topics it consumes and publishes. It is data
// and imports no service: the dev stack (what it starts, its router), tools/deploy (the chart's mesh
// table, NetworkPolicies, README, values schema, Dockerfile) and the docs all read it, and tests hold
// each service's own declaration to it.
//
// The contracts between deployables are declared here too, once: the internal edge routes.
package mesh

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
)

// Kind is what sort of deployable one is: it says how the dev stack runs it and what the chart
// gives it.
type Kind string

const (
	// Service is a kit.Service: its own schema and consumer group, a public and an internal port.
	Service Kind = "service"
	// Edge is the WebSocket edge: no schema, every partition of the edge topics.
	Edge Kind = "edge"
	// Operator is the ExportJob operator: no public port, the Kubernetes API.
	Operator Kind = "operator"
	// Indexer reads the chain and produces the protocol topics.
	Indexer Kind = "indexer"
	// Tx builds transactions for clients.
	Tx Kind = "tx"
)

// The internal routes the WebSocket edge reads from the services that own its channels, on their
// internal ports. Each is served by one deployable (Deployable.Serves) and read by others
// (Deployable.Reads).
const (
	// EdgeCandles answers the newest candles of every market and resolution (?symbol= for one).
	EdgeCandles = "/internal/edge/candles"
	// EdgeMarkets answers the last publication of every market's summary to edge.markets.
	EdgeMarkets = "/internal/edge/markets"
	// EdgePricing answers the last publication of every market's pricing to edge.pricing.
	EdgePricing = "/internal/edge/pricing"
	// EdgeNotifications answers one wallet's notifications channel seq (?authority=).
	EdgeNotifications = "/internal/edge/notifications"
)

// Deployable is one image and one Deployment of the chart (its values block has the same name).
type Deployable struct {
	Name string
	Kind Kind
	// Summary says in a line what it serves or does: the README's map and its image's description.
	Summary string
	// Main is its main package, relative to the repository root.
	Main string
	// Prefixes are the public path prefixes the edge routes to it ("/market/"), as the chart's Ingress
	// and the dev stack's router do.
	Prefixes []string
	// Serves are the internal routes it answers for other deployables (not its export streams, which
	// every service has).
	Serves []string
	// Reads are the internal routes of other deployables it reads.
	Reads []string
	// Consumes are the topics it reads; Publishes the ones it writes.
	Consumes  []string
	Publishes []string
}

// deployables are the mesh, in the chart's order. Adding a deployable is a line here (and, for a
// kit service, its declaration in the dev stack's list of constructors).
var deployables = []Deployable{
	{Name: "indexer", Kind: Indexer, Summary: "Reads the protocol's history from a Solana JSON-RPC endpoint into the protocol topics.", Main: "./services/indexer/cmd/indexer",
		Publishes: []string{events.TopicFills, events.TopicOrderActions, events.TopicOrders, events.TopicFundingRates, events.TopicFundingPayments,
			events.TopicLiquidations, events.TopicDeposits, events.TopicSwaps, events.TopicSettlePnl, events.TopicLP,
			events.TopicInsuranceFund, events.TopicIFStakes, events.TopicLPMintRedeem, events.TopicNewUsers, events.TopicMarketStates}},
	{Name: "market", Kind: Service, Summary: "A market's trades, candles, funding rates, deposits, swaps, rewards and insurance fund.", Main: "./services/market/cmd/market", Prefixes: []string{"/market/"},
		Serves:    []string{EdgeCandles},
		Consumes:  []string{events.TopicFills, events.TopicFundingRates, events.TopicInsuranceFund, events.TopicIFStakes, events.TopicSwaps, events.TopicDeposits},
		Publishes: []string{events.TopicEdgeCandles}},
	{Name: "user", Kind: Service, Summary: "An account's trades, orders, positions, deposits, funding payments, liquidations and LP records.", Main: "./services/user/cmd/user", Prefixes: []string{"/user/"},
		Consumes: []string{events.TopicFills, events.TopicOrders, events.TopicOrderActions, events.TopicSwaps, events.TopicDeposits,
			events.TopicSettlePnl, events.TopicFundingPayments, events.TopicLiquidations, events.TopicLP, events.TopicAccountSnapshots}},
	{Name: "authority", Kind: Service, Summary: "A wallet's accounts, snapshots, insurance fund stakes and CSV exports.", Main: "./services/authority/cmd/authority", Prefixes: []string{"/authority/"},
		Consumes: []string{events.TopicNewUsers, events.TopicIFStakes, events.TopicLPMintRedeem, events.TopicAccountSnapshots}},
	{Name: "amm", Kind: Service, Summary: "The AMM's series: prices, spreads, open interest and positions.", Main: "./services/amm/cmd/amm", Prefixes: []string{"/amm/"},
		Consumes: []string{events.TopicMarketStates}},
	{Name: "notify", Kind: Service, Summary: "A wallet's notification feed.", Main: "./services/notify/cmd/notify", Prefixes: []string{"/notifications"},
		Serves: []string{EdgeNotifications},
		Consumes: []string{events.TopicNewUsers, events.TopicFills, events.TopicLiquidations, events.TopicDeposits,
			events.TopicSettlePnl, events.TopicFundingPayments},
		Publishes: []string{events.TopicEdgeNotifications}},
	// /params and /vaults are exact reads; these prefixes match them and nothing else the API serves.
	{Name: "stats", Kind: Service, Summary: "Market summaries, volumes, leaderboards, liquidations, insurance fund, parameters and vaults.", Main: "./services/stats/cmd/stats", Prefixes: []string{"/stats/", "/params", "/vaults", "/external/"},
		Serves: []string{EdgeMarkets, EdgePricing},
		Consumes: []string{events.TopicFills, events.TopicFundingRates, events.TopicLiquidations, events.TopicInsuranceFund,
			events.TopicIFStakes, events.TopicSwaps, events.TopicDeposits, events.TopicSettlePnl, events.TopicNewUsers,
			events.TopicMarketStates, events.TopicVaults, events.TopicParams},
		Publishes: []string{events.TopicEdgeMarkets, events.TopicEdgePricing}},
	{Name: "ws", Kind: Edge, Summary: "The WebSocket edge: candles, markets, prices and notifications as they change.", Main: "./services/ws/cmd/ws", Prefixes: []string{"/ws"},
		Reads:    []string{EdgeCandles, EdgeMarkets, EdgePricing, EdgeNotifications},
		Consumes: []string{events.TopicEdgeCandles, events.TopicEdgeMarkets, events.TopicEdgePricing, events.TopicEdgeNotifications}},
	{Name: "tx", Kind: Tx, Summary: "Builds the protocol's unsigned transactions from chain state read over Solana JSON-RPC (BETA).", Main: "./services/tx/cmd/tx", Prefixes: []string{"/tx/"}},
	{Name: "operator", Kind: Operator, Summary: "Runs the ExportJob custom resources: each export written to the bucket.", Main: "./operator/cmd/operator"},
}

// Deployables are the mesh's deployables, in the chart's order; the caller may change the copy.
func Deployables() []Deployable {
	out := make([]Deployable, len(deployables))
	for i, d := range deployables {
		out[i] = d.clone()
	}
	return out
}

// Of are the deployables of one kind, in order.
func Of(k Kind) []Deployable {
	var out []Deployable
	for _, d := range Deployables() {
		if d.Kind == k {
			out = append(out, d)
		}
	}
	return out
}

// Lookup is the deployable named name.
func Lookup(name string) (Deployable, bool) {
	for _, d := range deployables {
		if d.Name == name {
			return d.clone(), true
		}
	}
	return Deployable{}, false
}

// Server is the deployable that serves the internal route, if any.
func Server(route string) (Deployable, bool) {
	for _, d := range deployables {
		if slices.Contains(d.Serves, route) {
			return d.clone(), true
		}
	}
	return Deployable{}, false
}

// Upstreams are the deployables whose internal routes d reads, in the registry's order.
func (d Deployable) Upstreams() []string {
	var out []string
	for _, o := range deployables {
		for _, r := range d.Reads {
			if slices.Contains(o.Serves, r) {
				out = append(out, o.Name)
				break
			}
		}
	}
	return out
}

// UpstreamVariable is the variable, without the TIDEMARK_ prefix, that gives d the internal base URL
// of upstream, one of its Upstreams: WS_MARKET_URL for the edge's market. The deployable reads it and
// the chart sets it to the upstream's Service, so neither writes the name on its own.
func (d Deployable) UpstreamVariable(upstream string) string {
	return strings.ToUpper(strings.ReplaceAll(d.Name+"_"+upstream, "-", "_")) + "_URL"
}

// Route sends every request whose path starts with Prefix to Deployable: a row of the public edge's
// routing table, the same for the dev stack's router and the chart's Ingress.
type Route struct {
	Prefix     string
	Deployable string
	// Exact: only the path Prefix itself, not the paths under it.
	Exact bool
}

// OpenAPIPath is the contract's path, served by every service; the edge routes it to the first.
const OpenAPIPath = "/openapi.json"

// Routes are the public edge's routing table: every deployable's prefixes, and the contract from the
// first service.
func Routes() []Route {
	var out []Route
	for _, d := range deployables {
		for _, p := range d.Prefixes {
			out = append(out, Route{Prefix: p, Deployable: d.Name})
		}
	}
	if s := Of(Service); len(s) > 0 {
		out = append(out, Route{Prefix: OpenAPIPath, Deployable: s[0].Name, Exact: true})
	}
	return out
}

// Topics are every topic a deployable consumes or publishes, each once, in the registry's order.
func Topics() []string {
	var out []string
	for _, d := range deployables {
		for _, t := range slices.Concat(d.Consumes, d.Publishes) {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// TopicPlan is how the mesh's topics are declared to a cluster: partitions and replication factor
// of every topic (a platform's choice), retention by what the topic is.
type TopicPlan struct {
	Partitions, ReplicationFactor int
}

// The retention of each sort of topic. The protocol topics are the history every service's schema
// is built from (a new service, or one rebuilt, reads them from the start): they keep everything.
// The edge topics carry live changes the edge reads from their end: a day covers any restart. Dead
// letters wait for someone to look at them.
const (
	EdgeRetention = 24 * time.Hour
	DLQRetention  = 30 * 24 * time.Hour
)

// TopicSpecs are every topic a deployable consumes or publishes, and the dead-letter topic of each
// protocol topic consumed, as p declares them.
func TopicSpecs(p TopicPlan) []kafka.TopicSpec {
	var out []kafka.TopicSpec
	for _, t := range Topics() {
		tp, _ := events.TopicByName(t)
		spec := kafka.TopicSpec{Name: t, Partitions: p.Partitions, ReplicationFactor: p.ReplicationFactor, Retention: kafka.Forever}
		if tp.Edge() {
			spec.Retention = EdgeRetention
		}
		out = append(out, spec)
		if !tp.Edge() {
			out = append(out, kafka.TopicSpec{Name: events.DLQTopic(t), Partitions: p.Partitions,
				ReplicationFactor: p.ReplicationFactor, Retention: DLQRetention})
		}
	}
	return out
}

// ACLs are every permission d's Kafka user needs, and no more: a consumer reads and describes its
// topics and reads its group (the service's name) and writes the DLQ of each topic it reads; a
// publisher writes its topics; the edge reads the edge topics without a group.
func (d Deployable) ACLs() []kafka.ACL {
	var out []kafka.ACL
	for _, t := range d.Consumes {
		out = append(out, kafka.ACL{Resource: "topic", Name: t, Operations: []string{"Read", "Describe"}})
	}
	if d.Kind == Service && len(d.Consumes) > 0 {
		out = append(out, kafka.ACL{Resource: "group", Name: d.Name, Operations: []string{"Read", "Describe"}})
		for _, t := range d.Consumes {
			out = append(out, kafka.ACL{Resource: "topic", Name: events.DLQTopic(t), Operations: []string{"Write", "Describe"}})
		}
	}
	for _, t := range d.Publishes {
		out = append(out, kafka.ACL{Resource: "topic", Name: t, Operations: []string{"Write", "Describe"}})
	}
	return out
}

// TopicsCommandACLs are what the user of the topics command needs: to see every declared topic and
// its settings, and to create the missing ones.
func TopicsCommandACLs(specs []kafka.TopicSpec) []kafka.ACL {
	out := make([]kafka.ACL, 0, len(specs))
	for _, s := range specs {
		out = append(out, kafka.ACL{Resource: "topic", Name: s.Name, Operations: []string{"Create", "Describe", "DescribeConfigs"}})
	}
	return out
}

// Check reports what makes the registry inconsistent: a name given twice, a kind or main missing, a
// prefix routed to two deployables, an internal route served twice or read and served by none, an
// internal route outside /internal/, a topic unknown to events, an edge topic published by none.
func Check() error {
	var errs []string
	names, prefixes, served := map[string]bool{}, map[string]string{}, map[string]string{}
	published := map[string]bool{}
	for _, d := range deployables {
		if d.Name == "" || d.Kind == "" || d.Main == "" || d.Summary == "" {
			errs = append(errs, fmt.Sprintf("%q: a deployable needs a Name, a Kind, a Summary and a Main", d.Name))
		}
		if names[d.Name] {
			errs = append(errs, fmt.Sprintf("%s is declared twice", d.Name))
		}
		names[d.Name] = true
		for _, p := range d.Prefixes {
			if o, ok := prefixes[p]; ok {
				errs = append(errs, fmt.Sprintf("prefix %s is routed to %s and %s", p, o, d.Name))
			}
			prefixes[p] = d.Name
		}
		for _, r := range d.Serves {
			if !strings.HasPrefix(r, "/internal/") {
				errs = append(errs, fmt.Sprintf("%s serves %s, outside /internal/", d.Name, r))
			}
			if o, ok := served[r]; ok {
				errs = append(errs, fmt.Sprintf("%s is served by %s and %s", r, o, d.Name))
			}
			served[r] = d.Name
		}
		for _, t := range slices.Concat(d.Consumes, d.Publishes) {
			if _, ok := events.TopicByName(t); !ok {
				errs = append(errs, fmt.Sprintf("%s: topic %s is not in events' registry", d.Name, t))
			}
		}
		for _, t := range d.Publishes {
			published[t] = true
		}
	}
	for _, d := range deployables {
		for _, r := range d.Reads {
			if _, ok := served[r]; !ok {
				errs = append(errs, fmt.Sprintf("%s reads %s, which no deployable serves", d.Name, r))
			}
		}
		for _, t := range d.Consumes {
			if tp, _ := events.TopicByName(t); tp.Edge() && !published[t] {
				errs = append(errs, fmt.Sprintf("%s consumes %s, which no deployable publishes", d.Name, t))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("mesh: %s", strings.Join(errs, "; "))
	}
	return nil
}

func (d Deployable) clone() Deployable {
	d.Prefixes = slices.Clone(d.Prefixes)
	d.Serves = slices.Clone(d.Serves)
	d.Reads = slices.Clone(d.Reads)
	d.Consumes = slices.Clone(d.Consumes)
	d.Publishes = slices.Clone(d.Publishes)
	return d
}
