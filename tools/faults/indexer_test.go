package faults_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/telemetry"
	indexer "github.com/tidemark/tidemark/services/indexer/service"
	"github.com/tidemark/tidemark/tools/simchain"
)

// chainConsumers are the services of the protocol topics the indexer writes.
var chainConsumers = []string{"market", "user", "stats", "notify", "authority", "amm"}

// indexerConfig is the tests' indexer of the chain at url from slot start (the first run).
func indexerConfig(url string, start uint64) indexer.Config {
	cfg := indexer.Config{RPC: rpc.Endpoint{URL: url}}
	cfg.Start = start
	cfg.InFlight = 4
	cfg.BatchEvents = 500 // many checkpoints, so that a crash falls between two
	cfg.Poll = 50 * time.Millisecond
	// The market states of a replayed history are the simulator's (an account is read as it is
	// now, which a replay cannot give): the account path has tests of its own.
	cfg.Accounts = time.Hour
	cfg.StateEvery = time.Hour
	return cfg
}

// indexerReplica starts an indexer of the chain at url from slot start on pool.
func indexerReplica(tb testing.TB, pool *pgxpool.Pool, kc kafka.Config, url string, start uint64) *replica {
	tb.Helper()
	return startReplica(tb, indexer.Service(indexerConfig(url, start)), pool, kc, nil)
}

// waitIndexed waits until the indexer's checkpoint on pool reaches the chain's tip.
func waitIndexed(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, chain *simchain.Chain) {
	tb.Helper()
	tip := chain.Tip()
	kittest.Eventually(tb, 3*time.Minute, "the indexer to reach the chain's tip", func() bool {
		var slot int64
		err := pool.QueryRow(ctx, `SELECT slot FROM indexer.checkpoint`).Scan(&slot)
		return err == nil && slot >= tip
	})
}

// firstSlot is the lowest slot of the history's records.
func firstSlot(tb testing.TB, msgs []events.Message) uint64 {
	tb.Helper()
	first := uint64(0)
	for _, m := range msgs {
		var v struct {
			Slot uint64 `json:"slot"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			tb.Fatal(err)
		}
		if v.Slot > 0 && (first == 0 || v.Slot < first) {
			first = v.Slot
		}
	}
	return first
}

// runThroughChain is run with the history after the warm-up written to the simulated chain (the
// records of the topics with an on-chain source, as the program's events in blocks) and the indexer
// writing them to Kafka; the rest (snapshots, vaults, params and, see indexerConfig, market states)
// goes to Kafka directly. The warm-up goes to Kafka directly too, as run writes it: the chain takes
// records in time order only, and run's warm-up (its fills and deposits first, so that every later
// event's market is known) is not.
func runThroughChain(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, msgs []events.Message, names []string) []string {
	tb.Helper()
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: partitions})
	if err != nil {
		tb.Fatal(err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "faults"}
	createTopics(ctx, tb, kc)
	chain := simchain.New(simchain.Config{})
	srv := httptest.NewServer(chain.Handler())
	defer srv.Close()
	w := kc.NewWriter("")
	defer w.Close()
	direct := kafka.Producer{W: w}
	until := eventTs(msgs[0]) + int64(warmUp/time.Second)
	var first, warm, onChain, states []events.Message
	for _, m := range msgs {
		switch ts := eventTs(m); {
		case (m.Topic == events.TopicFills || m.Topic == events.TopicDeposits) && ts < until:
			first = append(first, m)
		case ts < until:
			warm = append(warm, m)
		case m.Topic == events.TopicMarketStates:
			states = append(states, m)
		default:
			onChain = append(onChain, m)
		}
	}
	rs := startMesh(tb, pool, kc, names...)
	if err := direct.Write(ctx, first...); err != nil {
		tb.Fatal(err)
	}
	waitCaughtUp(ctx, tb, pool, kc, rs...)
	if err := direct.Write(ctx, slices.Concat(warm, states)...); err != nil {
		tb.Fatal(err)
	}
	if err := chain.Writer(direct).Write(ctx, onChain...); err != nil {
		tb.Fatal(err)
	}
	chain.Seal()
	idx := indexerReplica(tb, pool, kc, srv.URL, firstSlot(tb, onChain))
	waitIndexed(ctx, tb, pool, chain)
	waitCaughtUp(ctx, tb, pool, kc, rs...)
	settle(ctx, tb, pool, rs...)
	stopAll(tb, append(rs, idx))
	st := chain.Stats()
	tb.Logf("the chain: %d blocks, %d transactions, %d events", st.Blocks, st.Transactions, st.Events)
	return schemas(rs...)
}

// TestIndexerPathEqualsDirect writes ninety minutes of the simulator's history once straight to
// Kafka and once through the simulated chain and the indexer: every table of every service that
// consumes a protocol topic must be equal, row for row.
func TestIndexerPathEqualsDirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	msgs := history(t, 90*time.Minute)

	direct := openDB(ctx, t, srv.CreateDatabase, "direct")
	run(ctx, t, direct, msgs, chainConsumers, nil)
	indexed := openDB(ctx, t, srv.CreateDatabase, "indexed")
	all := runThroughChain(ctx, t, indexed, msgs, chainConsumers)
	sameState(ctx, t, indexed, direct, "the direct run", all...)
	n := map[string]int{}
	for _, m := range msgs {
		n[m.Topic]++
	}
	t.Logf("%d messages through the chain and the indexer: %v", len(msgs), n)
	if !slices.Contains(all, "amm") {
		t.Error("amm did not run")
	}
}

// writerFunc is a sim.Writer of a function.
type writerFunc func(ctx context.Context, msgs ...events.Message) error

func (f writerFunc) Write(ctx context.Context, msgs ...events.Message) error { return f(ctx, msgs...) }

// txKey is a record's identity on chain.
type txKey struct {
	sig   string
	index int
}

func txKeyOf(tb testing.TB, m events.Message) (txKey, bool) {
	var v struct {
		TxSig      string `json:"txSig"`
		TxSigIndex int    `json:"txSigIndex"`
	}
	if err := json.Unmarshal(m.Value, &v); err != nil {
		tb.Fatal(err)
	}
	return txKey{v.TxSig, v.TxSigIndex}, v.TxSig != ""
}

// startIndexer starts an indexer of cfg on pool and kc, with its metrics in reg, until stop.
func startIndexer(tb testing.TB, cfg indexer.Config, pool *pgxpool.Pool, kc kafka.Config, reg *prometheus.Registry) *replica {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inst, err := kit.Start(ctx, indexer.Service(cfg), kit.Runtime{Pool: pool, Kafka: kc, Logger: logger(), Registry: reg, PageKey: kittest.PageKey}, kit.Settings{})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	var once sync.Once
	var runErr error
	r := &replica{inst: inst, stop: func() error {
		once.Do(func() { cancel(); runErr = <-done })
		return runErr
	}}
	tb.Cleanup(func() { _ = r.stop() })
	return r
}

// counter sums the samples of the counter name in regs whose labels include want.
func counter(tb testing.TB, name string, want map[string]string, regs ...*prometheus.Registry) float64 {
	tb.Helper()
	var sum float64
	for _, reg := range regs {
		sum += kittest.Metric(tb, reg, name, want)
	}
	return sum
}

// endTotal is the number of messages in the protocol topics.
func endTotal(ctx context.Context, tb testing.TB, kc kafka.Config) int64 {
	tb.Helper()
	ends, err := kc.EndOffsets(ctx, events.ProtocolTopics()...)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, parts := range ends {
		for _, end := range parts {
			n += end
		}
	}
	return n
}

// TestIndexerSurvivesTheChainsFaults indexes an hour of history from a chain that does what real
// ones do: an endpoint that rate-limits, times out and fails with 5xx, slots without a block, a
// log the runtime truncated and a fill missing from a block (a fillRecordId gap), with the indexer
// killed after Kafka took a batch and before its checkpoint, and restarted. Market's and user's
// tables must equal a direct run of the records the chain still holds: nothing lost that the
// chain has, nothing doubled; and every fault is counted.
func TestIndexerSurvivesTheChainsFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	msgs := history(t, time.Hour)
	names := []string{"market", "user"}

	// The whole chain first, so that its faults can be aimed at sealed blocks.
	chain := simchain.New(simchain.Config{})
	var direct []events.Message
	feed := chain.Writer(writerFunc(func(_ context.Context, ms ...events.Message) error {
		direct = append(direct, ms...)
		return nil
	}))
	perTx := map[string]int{}
	for _, m := range msgs {
		if m.Topic == events.TopicMarketStates {
			direct = append(direct, m)
			continue
		}
		if err := feed.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		if k, ok := txKeyOf(t, m); ok && simchain.EventTopic(m.Topic) {
			perTx[k.sig]++
		}
	}
	chain.Seal()
	slots := chain.Slots()
	dropped, err := chain.Skip(slots[len(slots)/3], slots[len(slots)/3+1])
	if err != nil {
		t.Fatal(err)
	}
	var cut string
	for _, m := range msgs[len(msgs)/2:] {
		if k, ok := txKeyOf(t, m); ok && perTx[k.sig] >= 3 {
			cut = k.sig
			break
		}
	}
	truncated, err := chain.Truncate(cut, 1)
	if err != nil {
		t.Fatal(err)
	}
	gap, err := chain.DropFill(events.MarketTypePerp, 0)
	if err != nil {
		t.Fatal(err)
	}
	lost := map[txKey]bool{}
	for _, d := range slices.Concat(dropped, truncated, []simchain.Dropped{gap}) {
		lost[txKey{d.TxSig, d.TxSigIndex}] = true
	}
	var expected []events.Message
	for _, m := range msgs {
		if k, ok := txKeyOf(t, m); ok && simchain.EventTopic(m.Topic) && lost[k] {
			continue
		}
		expected = append(expected, m)
	}
	if len(msgs)-len(expected) != len(lost) {
		t.Fatalf("%d records taken off the chain, %d found in the history", len(lost), len(msgs)-len(expected))
	}
	want := openDB(ctx, t, srv.CreateDatabase, "want")
	run(ctx, t, want, expected, names, nil)

	pool := openDB(ctx, t, srv.CreateDatabase, "indexed")
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "faults"}
	createTopics(ctx, t, kc)
	rs := startMesh(t, pool, kc, names...)
	w := kc.NewWriter("")
	defer w.Close()
	if err := (kafka.Producer{W: w}).Write(ctx, direct...); err != nil {
		t.Fatal(err)
	}
	rpcSrv := httptest.NewServer(chain.Handler())
	defer rpcSrv.Close()
	chain.SetFaults(simchain.Faults{RateLimit: 40, TimeoutEvery: 23, TimeoutDelay: 2 * time.Second, ServerErrorEvery: 17})
	cfg := indexerConfig(rpcSrv.URL, uint64(slots[0]))
	cfg.RPC.Timeout = 300 * time.Millisecond
	reg1, reg2 := telemetry.NewRegistry(), telemetry.NewRegistry()
	first := startIndexer(t, cfg, pool, kc, reg1)

	// The crash: once the indexer is under way, its checkpoint table is locked, so that the next
	// batch reaches Kafka and its checkpoint waits; then the indexer is killed there.
	kittest.Eventually(t, 2*time.Minute, "the indexer's first checkpoints", func() bool {
		var slot int64
		return pool.QueryRow(ctx, `SELECT slot FROM indexer.checkpoint`).Scan(&slot) == nil && slot > slots[len(slots)/10]
	})
	lock, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE indexer.checkpoint IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var atCrash int64
	if err := lock.QueryRow(ctx, `SELECT slot FROM indexer.checkpoint`).Scan(&atCrash); err != nil {
		t.Fatal(err)
	}
	before := endTotal(ctx, t, kc)
	kittest.Eventually(t, time.Minute, "a batch acknowledged past the locked checkpoint", func() bool {
		return endTotal(ctx, t, kc) > before
	})
	_ = first.stop()
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var afterCrash int64
	if err := pool.QueryRow(ctx, `SELECT slot FROM indexer.checkpoint`).Scan(&afterCrash); err != nil {
		t.Fatal(err)
	}
	if afterCrash != atCrash {
		t.Fatalf("the checkpoint moved from %d to %d while locked", atCrash, afterCrash)
	}
	written := endTotal(ctx, t, kc) - before

	// The restart: from the checkpoint, writing again what the first wrote past it.
	startIndexer(t, cfg, pool, kc, reg2)
	waitIndexed(ctx, t, pool, chain)
	waitCaughtUp(ctx, t, pool, kc, rs...)
	settle(ctx, t, pool, rs...)
	stopAll(t, rs)
	sameState(ctx, t, pool, want, "a direct run of what the chain holds", schemas(rs...)...)

	c := chain.Counts()
	t.Logf("chain: %+v; %d messages written past the checkpoint before the kill", c, written)
	if c.RateLimited == 0 || c.TimedOut == 0 || c.ServerErrors == 0 || c.SkippedSlots != 2 || c.TruncatedTxs != 1 || c.DroppedFills != 1 {
		t.Errorf("the chain's faults did not all happen: %+v", c)
	}
	for _, f := range []struct {
		name   string
		labels map[string]string
	}{
		{"tidemark_rpc_requests_total", map[string]string{"code": "http_429"}},
		{"tidemark_rpc_requests_total", map[string]string{"code": "timeout"}},
		{"tidemark_rpc_requests_total", map[string]string{"code": "http_500"}},
		{"tidemark_rpc_requests_total", map[string]string{"code": "http_503"}},
		{"tidemark_indexer_truncated_logs_total", nil},
		{"tidemark_indexer_fill_gaps_total", nil},
	} {
		if counter(t, f.name, f.labels, reg1, reg2) == 0 {
			t.Errorf("%s%v not counted", f.name, f.labels)
		}
	}
	// Every fill taken off the chain (the missing one, those of the skipped blocks and of the cut
	// log) is a fillRecordId the indexer never saw.
	fills := 0
	for _, d := range slices.Concat(dropped, truncated, []simchain.Dropped{gap}) {
		if oa, ok := d.Event.(*drift.OrderActionRecord); ok && oa.Action == drift.OrderActionFill {
			fills++
		}
	}
	if n := counter(t, "tidemark_indexer_fill_gap_ids_total", nil, reg1, reg2); int(n) != fills {
		t.Errorf("%v fillRecordIds counted missing, want the %d fills taken off the chain", n, fills)
	}
}
