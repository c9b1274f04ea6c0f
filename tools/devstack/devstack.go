// Package devstack runs the whole mesh in one process for a laptop: an embedded Kafka broker, a
// local PostgreSQL cluster under ./.data, every service of Services through the kit, each on its own
// loopback ports with its own schema and consumer group and all on one metrics registry, one edge
// router that routes by path prefix like the chart's Ingress, and the simulator feeding protocol events.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/telemetry"
	amm "github.com/tidemark/tidemark/services/amm/service"
	authority "github.com/tidemark/tidemark/services/authority/service"
	indexerpg "github.com/tidemark/tidemark/services/indexer/postgres"
	indexer "github.com/tidemark/tidemark/services/indexer/service"
	market "github.com/tidemark/tidemark/services/market/service"
	notify "github.com/tidemark/tidemark/services/notify/service"
	stats "github.com/tidemark/tidemark/services/stats/service"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	user "github.com/tidemark/tidemark/services/user/service"
	wsservice "github.com/tidemark/tidemark/services/ws/service"
	"github.com/tidemark/tidemark/tools/monitoring"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// Options configure the stack; zero values take the defaults.
type Options struct {
	DataDir      string       // default ./.data; PostgreSQL keeps its cluster in DataDir/pg
	Addr         string       // edge router address, default ":8080"
	BackfillDays int          // history written before going live, default 3
	LiveRate     float64      // simulated events per second once live, default 20
	Seed         int64        // simulator seed, default 1
	Progress     io.Writer    // backfill progress bar, default stderr
	Out          io.Writer    // the banner with the URL, default stdout
	Logger       *slog.Logger // default JSON on stderr at warn
	Registry     *prometheus.Registry
	Ready        chan<- string // receives the base URL once the routes answer (tests)
	// Exports receives the export runner and its file store once they run, for callers that look at
	// jobs beside the Authority API (tests, benchmarks).
	Exports chan<- Exports
	// MemoryBudget is what the process may hold, default DefaultMemoryBudget; its soft limit is
	// set to memoryLimitShare of it while Run runs, unless GOMEMLIMIT is set. A laptop has no
	// container limit to take it from, and GOGC alone lets the heap grow to five times what is live.
	MemoryBudget int64
}

// DefaultMemoryBudget is the dev stack's memory budget unless told otherwise.
const DefaultMemoryBudget = 2 << 30

// memoryLimitShare of the budget is the Go soft limit: the rest is what the runtime holds beyond it.
const memoryLimitShare = 0.9

// What the embedded broker keeps of each partition the services consume (kafka.Trim): their
// history is in Postgres once consumed. The edge reads its topics from their end, so of those only
// the newest brokerEdgeKeep records of each partition stay: kept whole they grow for as long as the
// stack runs (every fill changes a candle of each resolution, live market states come every slot).
// The edge runs in this process and is never far behind; a reader that does fall behind the first
// record kept skips to it, as it skips history when it starts.
const (
	brokerEdgeKeep     = 1000
	brokerKeepBehind   = 2000
	brokerSegmentBytes = 1 << 20
	brokerTrimEvery    = 15 * time.Second
	chainPruneEvery    = time.Minute
)

func (o *Options) defaults() {
	if o.DataDir == "" {
		o.DataDir = ".data"
	}
	if o.Addr == "" {
		o.Addr = ":8080"
	}
	if o.BackfillDays == 0 {
		o.BackfillDays = 3
	}
	if o.LiveRate == 0 {
		o.LiveRate = 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = os.Stderr
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Logger == nil {
		o.Logger = telemetry.NewLogger(os.Stderr, slog.LevelWarn)
	}
	if o.Registry == nil {
		o.Registry = telemetry.NewRegistry()
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
}

// declarations are the kit services' constructors by name: every service of the registry
// (platform/mesh) has one here, which is how the dev stack, tools/deploy and the tests get its
// declaration (the registry is data and imports no service). Each takes what the dev stack hands
// its services in place of a cluster's (zero: nothing, as in a cluster).
var declarations = map[string]func(w wiring) kit.Service{
	"market": func(wiring) kit.Service { return market.Service(market.Config{}) },
	"user":   func(wiring) kit.Service { return user.Service() },
	"authority": func(w wiring) kit.Service {
		// The export API keeps its jobs in the dev stack's runner rather than a cluster.
		return authority.Service(authority.Config{Exports: w.exports})
	},
	"notify": func(wiring) kit.Service { return notify.Service(notify.Config{}) },
	"amm":    func(wiring) kit.Service { return amm.Service(amm.Config{}) },
	"stats":  func(wiring) kit.Service { return stats.Service() },
	// The indexer reads the simulated chain in the dev stack; in a cluster its endpoint comes from
	// its Secret.
	"indexer": func(w wiring) kit.Service { return indexer.Service(w.indexer) },
}

// devIndexer is the indexer's configuration in the dev stack: the simulated chain at url, read from
// the backfill's first slot, its market accounts sampled every second.
func devIndexer(url string, o Options) indexer.Config {
	cfg := indexer.Config{RPC: rpc.Endpoint{URL: url}}
	cfg.Start = uint64(sim.SlotAt(backfillStart(o)))
	cfg.Accounts = time.Second
	return cfg
}

// wiring is what the dev stack hands its services in place of a cluster's parts.
type wiring struct {
	exports *authority.Exports // export jobs in the runner, files in its folder; nil: a cluster's
	indexer indexer.Config     // the simulated chain's endpoint and first slot; zero: a cluster's
}

// Services are what `make run` runs, in one process: the services of the registry, in its order,
// declared as a cluster runs them. A service of the registry without a declaration here is left out
// (tools/deploy.Mesh and the tests report it).
func Services() []kit.Service { return services(wiring{}) }

// services are the registry's services declared with w.
func services(w wiring) []kit.Service {
	var out []kit.Service
	for _, d := range slices.Concat(mesh.Of(mesh.Indexer), mesh.Of(mesh.Service)) {
		if declare, ok := declarations[d.Name]; ok {
			out = append(out, declare(w))
		}
	}
	return out
}

// examples are a few paths of each service for the banner: {account} is a simulated account and
// {authority} its wallet, {year}/{month} the present month, {now} the present and {dayAgo} a day
// before it (unix seconds). An example starting with "$ " is a command run from the repository,
// with {base} the edge's URL and {seed} the simulator's seed.
var examples = map[string][]string{
	"market": {"/market/SOL-PERP/trades?limit=5", "/market/SOL-PERP/candles/60?limit=24", "/market/SOL-PERP/fundingRates",
		"/market/TRUMP-WIN-2028-BET/predictions", "/market/USDC/deposits"},
	"user": {"/user/{account}/trades", "/user/{account}/orders/perp?hasFill=true", "/user/{account}/positions",
		"/user/{account}/fundingPayments", "/user/{account}/snapshots/trading?days=1"},
	"authority": {"/authority/{authority}/accounts", "/authority/{authority}/snapshots/overview?days=1",
		"/authority/{authority}/insuranceFundStake/{year}/{month}", "/authority/{authority}/exports"},
	"notify": {"$ go run ./tools/cmd/notifysign -url {base} -seed {seed} -wallet 0 /notifications",
		"$ go run ./tools/cmd/notifysign -url {base} -seed {seed} -wallet 0 -X PUT -d '{\"pushOptOutTypes\":[\"RECORD_UPDATE\"]}' /notifications/preferences",
		"$ go run ./tools/cmd/notifysign -seed {seed} -list 5   # the simulated wallets (signed for with -wallet N or -wallet ADDRESS)"},
	"amm": {"/amm/oraclePrice?marketName=SOL-PERP&start={dayAgo}&end={now}&samples=24",
		"/amm/bidAskPrice?marketName=SOL-PERP&start={dayAgo}&end={now}&samples=12",
		"/amm/position?marketName=BTC-PERP&start={dayAgo}&end={now}&samples=6"},
	"stats": {"/stats/markets", "/stats/leaderboard?sort=volume&limit=10", "/stats/markets/volume/24h", "/stats/fundingRates",
		"/stats/liquidations", "/stats/USDC/rateHistory/deposit", "/params", "/vaults", "/external/aggregator/contracts"},
}

// Run starts everything and blocks until ctx ends, then stops it all in order.
func Run(ctx context.Context, o Options) error {
	o.defaults()
	log := o.Logger
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(float64(o.MemoryBudget) * memoryLimitShare)))
	}

	dataDir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	db, err := pglocal.Start(ctx, pglocal.Options{Dir: filepath.Join(dataDir, "pg"), Logger: log.With("component", "postgres")})
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer func() {
		if err := db.Stop(); err != nil {
			log.Warn("stop postgres", "err", err)
		}
	}()
	pgURL, err := ensureDatabase(ctx, db, "tidemark")
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, pgURL, 64)
	if err != nil {
		return err
	}
	defer pool.Close()

	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: partitions, SegmentBytes: brokerSegmentBytes})
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "devstack"}

	rt := kit.Runtime{
		Pool: pool, Kafka: kc, Logger: log, Registry: o.Registry,
		PageKey: []byte("tidemark-devstack-page-key-0000000000"),
	}
	var (
		g         app.Group
		instances []*kit.Instance
		topics    []string
		upstreams = map[string]string{} // service -> public base URL
		sources   = map[v1alpha1.FileType]string{}
	)
	edgeLn, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("edge router on %s: %w", o.Addr, err)
	}
	base := baseURL(edgeLn.Addr())
	// The export runner reads sources when it runs a job: they are filled in below, as the services
	// that stream each file type start.
	exports, err := startExports(&g, exportOptions{
		dir: filepath.Join(dataDir, "exports"), baseURL: base + downloadsPrefix,
		sources: sources, registry: o.Registry, logger: log.With("component", "exports"),
	})
	if err != nil {
		return err
	}
	// The simulator plays the chain: its JSON-RPC on loopback is the indexer's endpoint.
	chain := simchain.New(simchain.Config{Seed: o.Seed})
	chainLn, err := listen()
	if err != nil {
		return err
	}
	chainURL := "http://" + chainLn.Addr().String()
	g.Add("chain", func(ctx context.Context) error {
		return app.ServeListener(ctx, chainLn, chain.Handler(), 5*time.Second, log)
	})
	if err := o.Registry.Register(newChainBlocks(chain)); err != nil {
		return fmt.Errorf("chain metrics: %w", err)
	}
	w := wiring{exports: &authority.Exports{Jobs: exports.jobs, Files: exports.store}, indexer: devIndexer(chainURL, o)}
	for _, svc := range services(w) {
		inst, err := kit.Start(ctx, svc, rt, kit.Settings{})
		if err != nil {
			return fmt.Errorf("start %s: %w", svc.Name, err)
		}
		if err := agrees(inst, slices.Concat(svc.Publishes, svc.Produces)); err != nil {
			return err
		}
		instances = append(instances, inst)
		for _, t := range inst.Topics() {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	// The indexer's checkpoint says which of the chain's blocks are read: the banner reports the
	// backfill's, and the pruner drops them.
	at := slices.IndexFunc(instances, func(inst *kit.Instance) bool { return inst.Name() == indexer.Name })
	if at < 0 {
		return fmt.Errorf("no %s among the services: nothing reads the chain", indexer.Name)
	}
	checkpoints := indexerpg.NewStore(pool, instances[at].Schema())
	g.Add("chain pruner", func(ctx context.Context) error {
		return pruneChain(ctx, checkpoints, chain, chainPruneEvery, log.With("component", "chain"))
	})
	// The embedded broker starts empty on every run while Postgres keeps the offsets of the last one:
	// those would make the consumers skip the new broker's first messages as already stored.
	for _, inst := range instances {
		if err := resetOffsets(ctx, pool, inst.Schema()); err != nil {
			return err
		}
	}
	// Created up front, so that consumers join without waiting for auto-creation.
	for _, t := range mesh.Topics() {
		if !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	if err := kafka.EnsureTopics(ctx, kc.Brokers, partitions, topics...); err != nil {
		return err
	}
	broker.TrimEvery(brokerTrim(instances))
	if err := o.Registry.Register(newBrokerBytes(broker, topics)); err != nil {
		return fmt.Errorf("broker metrics: %w", err)
	}
	internalURLs := map[string]string{}
	for _, inst := range instances {
		d, err := serve(&g, inst.Name(), inst.Run, inst.Handler(), inst.InternalMux(o.Registry), log)
		if err != nil {
			return err
		}
		upstreams[inst.Name()], internalURLs[inst.Name()] = d.public, d.internal
		for _, ft := range inst.FileTypes() {
			sources[v1alpha1.FileType(ft)] = d.internal
		}
	}

	ws, err := startEdge(&g, kc, internalURLs, o.Registry, log)
	if err != nil {
		return err
	}
	upstreams[wsservice.Name] = ws.public
	tx, err := startTx(&g, chainURL, chain, o.Registry, log)
	if err != nil {
		return err
	}
	upstreams[txservice.Name] = tx.public

	upstreams["exports"] = exports.url
	// In a cluster, downloads are presigned S3 URLs; only the dev stack serves files itself.
	router, err := NewRouter(append(Table(), Route{Prefix: downloadsPrefix + "/", Service: "exports"}), upstreams, log)
	if err != nil {
		return err
	}
	g.Add("edge", func(ctx context.Context) error {
		return app.ServeListener(ctx, edgeLn, router, 5*time.Second, log)
	})
	simulator := newSimulator(o)
	account := simulator.Accounts()[0]
	txAccount, err := txUser(account)
	if err != nil {
		return err
	}
	g.Add("simulator", func(ctx context.Context) error {
		printBanner(o.Out, banner{base: base, pg: pgURL, brokers: broker.Brokers(), internal: internalURLs,
			instances: instances, account: account, seed: o.Seed, fileTypes: sources, ws: ws,
			budget: o.MemoryBudget, chain: chainURL, tx: tx, txAccount: txAccount})
		go reportIndexed(ctx, checkpoints, chain, o.Out, log)
		if o.Ready != nil {
			o.Ready <- base
		}
		if o.Exports != nil {
			o.Exports <- Exports{Jobs: exports.jobs, Files: exports.store}
		}
		return simulate(ctx, simulator, chain, kc, o, log)
	})
	err = g.Run(ctx)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// brokerTrim is what the broker keeps of each topic the services consume, what one of its groups
// has not stored yet, and of each edge topic, its newest records.
func brokerTrim(instances []*kit.Instance) kafka.Trim {
	t := kafka.Trim{Consumers: map[string][]string{}, KeepBehind: brokerKeepBehind, Every: brokerTrimEvery, TailKeep: brokerEdgeKeep}
	for _, inst := range instances {
		for _, topic := range inst.Consumes() {
			t.Consumers[topic] = append(t.Consumers[topic], inst.Group())
		}
	}
	for _, topic := range mesh.Topics() {
		if tp, ok := events.TopicByName(topic); ok && tp.Edge() {
			t.Tails = append(t.Tails, topic)
		}
	}
	return t
}

// partitions is how many partitions every topic has in the dev stack: enough for the consumers'
// writers to work in parallel.
const partitions = 3

// agrees reports where a started service and its row of the registry differ: the registry is what
// the router, the chart and the docs are made of, the instance is what runs.
func agrees(inst *kit.Instance, publishes []string) error {
	d, ok := mesh.Lookup(inst.Name())
	if !ok {
		return fmt.Errorf("%s runs but is not in the registry (platform/mesh)", inst.Name())
	}
	same := func(a, b []string) bool {
		return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
	}
	if !same(d.Prefixes, inst.Prefixes()) || !same(d.Consumes, inst.Consumes()) || !same(d.Publishes, publishes) {
		return fmt.Errorf("%s: the registry (platform/mesh) says prefixes %v, consumes %v, publishes %v; the service %v, %v, %v",
			inst.Name(), d.Prefixes, d.Consumes, d.Publishes, inst.Prefixes(), inst.Consumes(), publishes)
	}
	return nil
}

func ensureDatabase(ctx context.Context, db *pglocal.Server, name string) (string, error) {
	url, err := db.CreateDatabase(ctx, name)
	if err == nil {
		return url, nil
	}
	// A reused data dir already has it: connect to make sure that is the reason.
	url = db.URL(name)
	pool, perr := pg.Open(ctx, url, 1)
	if perr != nil {
		return "", fmt.Errorf("create database %s: %w", name, errors.Join(err, perr))
	}
	pool.Close()
	return url, nil
}

func resetOffsets(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, "DELETE FROM "+pgx.Identifier{schema, "kafka_offsets"}.Sanitize()); err != nil {
		return fmt.Errorf("reset %s offsets: %w", schema, err)
	}
	return nil
}

// served is a deployable of the stack on its two loopback ports.
type served struct {
	public, internal string // base URLs
}

// serve adds a deployable to g as a cluster runs it: its work, its public routes and its internal
// port (health, readiness, metrics), each on a loopback port of its own.
func serve(g *app.Group, name string, run func(context.Context) error, public, internal http.Handler, log *slog.Logger) (served, error) {
	publicLn, err := listen()
	if err != nil {
		return served{}, err
	}
	internalLn, err := listen()
	if err != nil {
		return served{}, err
	}
	g.Add(name, run)
	g.Add(name+" public", func(ctx context.Context) error {
		return app.ServeListener(ctx, publicLn, public, 5*time.Second, log)
	})
	g.Add(name+" internal", func(ctx context.Context) error {
		return app.ServeListener(ctx, internalLn, internal, 5*time.Second, log)
	})
	return served{public: "http://" + publicLn.Addr().String(), internal: "http://" + internalLn.Addr().String()}, nil
}

func listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on loopback: %w", err)
	}
	return ln, nil
}

func baseURL(a net.Addr) string {
	tcp := a.(*net.TCPAddr)
	host := "localhost"
	if !tcp.IP.IsUnspecified() && !tcp.IP.IsLoopback() {
		host = tcp.IP.String()
	}
	return fmt.Sprintf("http://%s:%d", host, tcp.Port)
}

// banner is what the dev stack tells its user once it runs.
type banner struct {
	base, pg  string
	brokers   []string
	internal  map[string]string // service -> internal base URL
	instances []*kit.Instance
	account   sim.Account // a simulated account, for the examples
	seed      int64       // the simulator's, for the examples' commands
	fileTypes map[v1alpha1.FileType]string
	ws        served
	budget    int64  // the memory budget, bytes
	chain     string // the simulated chain's JSON-RPC
	tx        served
	txAccount string // the User account of account's wallet at the program's address, for /tx
}

func printBanner(w io.Writer, b banner) {
	fmt.Fprintf(w, "\ntidemark is running at %s\n", b.base)
	for _, inst := range b.instances {
		serves := strings.Join(inst.Prefixes(), " ")
		if d, ok := mesh.Lookup(inst.Name()); ok && serves == "" {
			serves = d.Summary
		}
		fmt.Fprintf(w, "\n  %s  %s (internal: %s/metrics, %s/readyz)\n", inst.Name(), serves,
			b.internal[inst.Name()], b.internal[inst.Name()])
		now := time.Now().UTC()
		vars := strings.NewReplacer("{account}", b.account.User, "{authority}", b.account.Authority,
			"{year}", now.Format("2006"), "{month}", now.Format("01"),
			"{now}", fmt.Sprint(now.Unix()), "{dayAgo}", fmt.Sprint(now.Unix()-86400))
		for _, p := range examples[inst.Name()] {
			if cmd, ok := strings.CutPrefix(p, "$ "); ok {
				fmt.Fprintf(w, "    %s\n", strings.NewReplacer("{base}", b.base, "{seed}", strconv.FormatInt(b.seed, 10)).Replace(cmd))
				continue
			}
			fmt.Fprintf(w, "    curl -s '%s%s'\n", b.base, vars.Replace(p))
		}
	}
	fmt.Fprintf(w, "\n  chain     %s: the simulator plays the Solana JSON-RPC the indexer reads; the indexer's slot lag:\n"+
		"    curl -s %s/metrics | grep ^tidemark_indexer_slot_lag\n", b.chain, b.internal["indexer"])
	fmt.Fprintf(w, "\n  %s  %s (internal: %s/metrics, %s/readyz)\n", wsservice.Name, strings.Join(wsservice.Prefixes(), " "),
		b.ws.internal, b.ws.internal)
	wsURL := "ws" + strings.TrimPrefix(b.base, "http") + wsservice.Path
	for _, m := range wsExamples {
		fmt.Fprintf(w, "    websocat '%s'  then send  %s\n", wsURL, m)
	}
	fmt.Fprintf(w, "\n  %s  %s (internal: %s/metrics, %s/readyz)\n"+
		"    curl -s -XPOST '%s/tx/deposit' -d '{\"accountId\":\"%s\",\"amount\":\"10\",\"symbol\":\"USDC\"}' \\\n"+
		"      | go run ./tools/cmd/txsign -url %s -seed %d -wallet %s   # signs with the wallet's key and submits\n"+
		"    the simulated chain checks a transaction's structure and signatures but does not run the program.\n",
		txservice.Name, strings.Join(txservice.Prefixes(), " "), b.tx.internal, b.tx.internal, b.base, b.txAccount,
		b.base, b.seed, b.account.Authority)
	types := make([]string, 0, len(b.fileTypes))
	for ft := range b.fileTypes {
		types = append(types, string(ft))
	}
	slices.Sort(types)
	// Every internal port serves the process' whole registry: one target is the whole mesh.
	fmt.Fprintf(w, "\n  metrics:  point a local Prometheus at the mesh (the chart's dashboards read it as namespace %s):\n"+
		"    prometheus --storage.tsdb.path=.data/prometheus --config.file=<(echo '%s')\n",
		monitoring.LocalNamespace, monitoring.ScrapeConfig(strings.TrimPrefix(b.ws.internal, "http://"), "15s"))
	fmt.Fprintf(w, `
  contract: %[1]s/openapi.json
  postgres: %[2]s
  kafka:    %[3]s
  exports:  %[4]s jobs run in-process (the operator's state machine); files land in
            ./.data/exports and download from %[1]s/downloads/ with signed URLs; request one with
    curl -s -XPOST '%[1]s/authority/%[5]s/exports' -d '{"fileType":"trades","from":%[6]d,"to":%[7]d,"userPublicKeys":["%[8]s"]}'

  memory:   %[9]s held now, within a budget of %[10]s (make run MEMORY=4GiB, or -memory, or
            TIDEMARK_DEV_MEMORY; GOMEMLIMIT overrides it)

History is being backfilled, then the simulator goes live. Ctrl-C stops everything.
`, b.base, b.pg, strings.Join(b.brokers, ","), strings.Join(types, ", "), b.account.Authority,
		time.Now().Add(-24*time.Hour).Unix(), time.Now().Unix(), b.account.User, FormatBytes(heldBytes()), FormatBytes(b.budget))
}
