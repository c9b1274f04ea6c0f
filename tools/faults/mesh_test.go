package faults_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/local"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/telemetry"
	authority "github.com/tidemark/tidemark/services/authority/service"
	"github.com/tidemark/tidemark/tools/devstack"
	"github.com/tidemark/tidemark/tools/sim"
)

// partitions of every topic: more than one per replica of the replica tests.
const partitions = 6

// declaration is the mesh's declaration of the service called name.
func declaration(tb testing.TB, name string) kit.Service {
	tb.Helper()
	svc, ok := lookup(name)
	if !ok {
		tb.Fatalf("no service %s in the mesh", name)
	}
	return svc
}

func lookup(name string) (kit.Service, bool) {
	if name == "authority" {
		// Its export API needs somewhere to run jobs and keep files: the dev stack's, in a folder.
		files, err := objstore.NewLocal(objstore.LocalConfig{Dir: os.TempDir(), BaseURL: "http://127.0.0.1/downloads", Key: kittest.PageKey})
		if err != nil {
			panic(err)
		}
		runner, err := local.New(export.Config{}, export.Deps{Store: files, Source: export.HTTPSource{}}, nil)
		if err != nil {
			panic(err)
		}
		return authority.Service(authority.Config{Exports: &authority.Exports{Jobs: runner, Files: files}}), true
	}
	for _, svc := range devstack.Services() {
		if svc.Name == name {
			return svc, true
		}
	}
	return kit.Service{}, false
}

// logger is quiet unless the test runs verbose, then it shows warnings.
func logger() *slog.Logger {
	// A replica process (TestMain) has parsed no test flags.
	if flag.Parsed() && testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// settings are every instance's: short batches and backoffs, so that faults are met often and
// recovered from fast, and sessions as short as a broker allows.
func settings() kit.Settings {
	return kit.Settings{Ingest: ingestConfig()}
}

// replica is one running instance of a service.
type replica struct {
	inst *kit.Instance
	stop func() error
}

// startReplica starts svc on pool and kc and runs it until stop (or the test's end).
func startReplica(tb testing.TB, svc kit.Service, pool *pgxpool.Pool, kc kafka.Config, before func(context.Context, int) error) *replica {
	tb.Helper()
	r, err := newReplica(svc, pool, kc, before)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = r.stop() })
	return r
}

// newReplica starts svc on pool and kc and runs it until stop. before is the ingest's
// BeforeCommit hook (nil: none).
func newReplica(svc kit.Service, pool *pgxpool.Pool, kc kafka.Config, before func(context.Context, int) error) (*replica, error) {
	ctx, cancel := context.WithCancel(context.Background())
	rt := kit.Runtime{
		Pool: pool, Kafka: kc, Logger: logger(), Registry: telemetry.NewRegistry(), PageKey: kittest.PageKey,
		BeforeIngestCommit: before,
		// One clock for every run: what services decide by the time (which candle changes are
		// recent enough for the edge, when a notification was sent) is then decided alike.
		Now: func() time.Time { return historyEnd },
	}
	inst, err := kit.Start(ctx, svc, rt, settings())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", svc.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	var once sync.Once
	var runErr error
	return &replica{inst: inst, stop: func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}}, nil
}

// startMesh starts one replica of each named service.
func startMesh(tb testing.TB, pool *pgxpool.Pool, kc kafka.Config, names ...string) []*replica {
	tb.Helper()
	var out []*replica
	for _, name := range names {
		out = append(out, startReplica(tb, declaration(tb, name), pool, kc, nil))
	}
	return out
}

// stopAll stops replicas, failing the test on an error.
func stopAll(tb testing.TB, rs []*replica) {
	tb.Helper()
	for _, r := range rs {
		if err := r.stop(); err != nil {
			tb.Errorf("%s stopped with: %v", r.inst.Name(), err)
		}
	}
}

// historyEnd is the end of the simulated history and the services' clock.
var historyEnd = time.Now().Truncate(time.Minute)

// history is the simulator's events of the span before historyEnd, in time order: some ten thousand
// messages over every topic the services consume for 90 minutes.
func history(tb testing.TB, span time.Duration) []events.Message {
	tb.Helper()
	cfg := sim.DefaultConfig()
	cfg.Authorities = 60
	s := sim.New(cfg)
	var msgs []events.Message
	if err := s.Generate(historyEnd.Add(-span), historyEnd, func(m events.Message) error {
		msgs = append(msgs, m)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return msgs
}

// produce writes msgs to kc a slice of chunk every pause until hurry is closed, then the rest at
// once, so that they arrive while the test does its damage; it returns when all are acknowledged.
func produce(ctx context.Context, tb testing.TB, kc kafka.Config, msgs []events.Message, chunk int, pause time.Duration, hurry <-chan struct{}) {
	tb.Helper()
	w := kc.NewWriter("")
	defer w.Close()
	for len(msgs) > 0 {
		n := min(chunk, len(msgs))
		select {
		case <-hurry:
			n = len(msgs)
		default:
		}
		if err := (kafka.Producer{W: w}).Write(ctx, msgs[:n]...); err != nil {
			tb.Errorf("produce: %v", err)
			return
		}
		msgs = msgs[n:]
		select {
		case <-ctx.Done():
			return
		case <-hurry:
		case <-time.After(pause):
		}
	}
}

// createTopics creates every protocol and edge topic before any consumer joins its group.
func createTopics(ctx context.Context, tb testing.TB, kc kafka.Config) {
	tb.Helper()
	topics := events.ProtocolTopics()
	for _, svc := range devstack.Services() {
		topics = append(topics, svc.Publishes...)
	}
	if err := kafka.EnsureTopics(ctx, kc.Brokers, partitions, topics...); err != nil {
		tb.Fatal(err)
	}
}

// storedTotal is how many messages the stored offsets of every schema cover; 0 while Postgres
// does not answer.
func storedTotal(ctx context.Context, pool *pgxpool.Pool, schemas ...string) int64 {
	var total int64
	for _, s := range schemas {
		var n int64
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum("offset" + 1), 0) FROM `+pgx.Identifier{s, "kafka_offsets"}.Sanitize()).Scan(&n); err != nil {
			return 0
		}
		total += n
	}
	return total
}

// waitProgress waits until the services have stored n more messages than now.
func waitProgress(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, what string, n int64, schemas ...string) {
	tb.Helper()
	from := storedTotal(ctx, pool, schemas...)
	kittest.Eventually(tb, 2*time.Minute, fmt.Sprintf("%s: %d more messages stored", what, n), func() bool {
		return storedTotal(ctx, pool, schemas...) >= from+n
	})
}

// waitCaughtUp waits until each replica's service has stored every message of every topic it reads.
func waitCaughtUp(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, kc kafka.Config, rs ...*replica) {
	tb.Helper()
	for _, r := range rs {
		inst := r.inst
		ends, err := kc.EndOffsets(ctx, inst.Consumes()...)
		if err != nil {
			tb.Fatal(err)
		}
		kittest.Eventually(tb, 3*time.Minute, inst.Name()+" to store every message", func() bool {
			rows, err := pool.Query(ctx, `SELECT topic, partition, "offset" FROM `+pgx.Identifier{inst.Schema(), "kafka_offsets"}.Sanitize()+
				` WHERE consumer_group = $1`, inst.Group())
			if err != nil {
				return false
			}
			stored := map[string]map[int]int64{}
			var topic string
			var p int
			var off int64
			if _, err := pgx.ForEachRow(rows, []any{&topic, &p, &off}, func() error {
				if stored[topic] == nil {
					stored[topic] = map[int]int64{}
				}
				stored[topic][p] = off
				return nil
			}); err != nil {
				return false
			}
			for topic, parts := range ends {
				for p, end := range parts {
					if off, ok := stored[topic][p]; end > 0 && (!ok || off < end-1) {
						return false
					}
				}
			}
			return true
		})
	}
}

// schemas are the replicas' services' schemas, each once.
func schemas(rs ...*replica) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.inst.Schema()) {
			out = append(out, r.inst.Schema())
		}
	}
	return out
}

// volatile are tables whose contents depend on timing, not on the events: offsets (with their
// update times), the outbox a publisher drains, the migrations applied, and what stats' periodic
// publisher of market summaries sent (each tick's summary, numbered in its channel); and

// market's candle channels are numbered per batch (one message per bucket a batch changed), so
// their counts follow how messages fell into batches.
var volatile = []string{"kafka_offsets", "outbox", "schema_migrations", "stats.edge_published", "stats.outbox_seq",
	"market.outbox_seq"}

// identityOnly are tables compared by these columns alone. A fill between two subaccounts of one
// wallet is one notification of that wallet (its id is the event's and the wallet's), rendered from
// whichever side's occurrence is stored first: the taker's or the maker's, as the order in which
// their accounts' owners became known decides. That each event gives each wallet exactly one
// notification is what a failover must keep; which side's wording wins is not decided by the
// events, and is left out.
var identityOnly = map[string]string{
	"notify.notifications": "t.notification_id, t.authority, t.source, t.tx_sig, t.tx_sig_index, t.created_at",
}

// tableDigest is a table's row count and a digest of its rows in a stable order.
type tableDigest struct {
	Rows   int64
	Digest string
}

// digests reads every table of schema other than the volatile ones.
func digests(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, schema string) map[string]tableDigest {
	tb.Helper()
	rows, err := pool.Query(ctx, `
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`, schema)
	if err != nil {
		tb.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]tableDigest{}
	for _, table := range tables {
		if slices.Contains(volatile, table) || slices.Contains(volatile, schema+"."+table) {
			continue
		}
		id := pgx.Identifier{schema, table}.Sanitize()
		row := "t::text"
		if cols, ok := identityOnly[schema+"."+table]; ok {
			row = "(" + cols + ")::text"
		}
		var d tableDigest
		if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(md5(string_agg(r, E'\n' ORDER BY r)), '')
FROM (SELECT `+row+` AS r FROM `+id+` t) x`).Scan(&d.Rows, &d.Digest); err != nil {
			tb.Fatalf("digest %s: %v", id, err)
		}
		out[table] = d
	}
	return out
}

// sameState fails the test for every table of schemas that differs between got and want (pools on
// two databases that ingested the same events, want as wantRun did), and shows rows that differ.
func sameState(ctx context.Context, tb testing.TB, got, want *pgxpool.Pool, wantRun string, schemas ...string) {
	tb.Helper()
	for _, schema := range schemas {
		g, w := digests(ctx, tb, got, schema), digests(ctx, tb, want, schema)
		if len(w) == 0 {
			tb.Errorf("%s: no tables", schema)
		}
		for table, wd := range w {
			if gd := g[table]; gd != wd {
				tb.Errorf("%s.%s: %d rows (digest %s), want %d rows (%s)%s", schema, table, gd.Rows, gd.Digest, wd.Rows, wd.Digest,
					rowDiff(ctx, tb, got, want, pgx.Identifier{schema, table}.Sanitize()))
			}
		}
		var rows int64
		for _, d := range w {
			rows += d.Rows
		}
		if !tb.Failed() {
			tb.Logf("%s: %d tables, %d rows, equal to %s", schema, len(w), rows, wantRun)
		}
	}
}

// rowDiff shows a few rows that one side has and the other lacks.
func rowDiff(ctx context.Context, tb testing.TB, got, want *pgxpool.Pool, table string) string {
	tb.Helper()
	read := func(p *pgxpool.Pool) map[string]int {
		rows, err := p.Query(ctx, `SELECT t::text FROM `+table+` t`)
		if err != nil {
			tb.Fatal(err)
		}
		all, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			tb.Fatal(err)
		}
		m := map[string]int{}
		for _, r := range all {
			m[r]++
		}
		return m
	}
	g, w := read(got), read(want)
	var b strings.Builder
	shown := 0
	for r, n := range g {
		if n != w[r] && shown < 5 {
			fmt.Fprintf(&b, "\n  got %d× want %d×: %s", n, w[r], r)
			shown++
		}
	}
	for r, n := range w {
		if g[r] == 0 && shown < 10 {
			fmt.Fprintf(&b, "\n  missing (want %d×): %s", n, r)
			shown++
		}
	}
	return b.String()
}

// openDB creates database name on the server at url's host and opens a pool on it.
func openDB(ctx context.Context, tb testing.TB, create func(context.Context, string) (string, error), name string) *pgxpool.Pool {
	tb.Helper()
	url, err := create(ctx, name)
	if err != nil {
		tb.Fatal(err)
	}
	pool, err := pg.Open(ctx, url+"&connect_timeout=2", 16)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// settle waits until the background work that follows ingest is done: stats folds the wallets'
// deltas into their months once a second.
func settle(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, rs ...*replica) {
	tb.Helper()
	if !slices.Contains(schemas(rs...), "stats") {
		return
	}
	kittest.Eventually(tb, time.Minute, "stats to fold every delta", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM stats.volume_deltas) + (SELECT count(*) FROM stats.pnl_deltas)`).Scan(&n)
		return err == nil && n == 0
	})
}

// warmUp is how much of the history's fills and deposits go in before the rest, in both runs: the
// markets every later event names are known by then, so the services render them alike (a
// notification of a settlement names its market once a fill or a deposit has taught notify the name).
const warmUp = 10 * time.Minute

// run starts a broker and the named services on pool, feeds them the history (the fills and deposits
// of its first warmUp, then the rest while damage runs, when given), waits until they have stored every message and their
// background work is done, and stops them. damage gets the broker and the running replicas, and
// returns those running after it. run returns the services' schemas.
func run(ctx context.Context, tb testing.TB, pool *pgxpool.Pool, msgs []events.Message, names []string,
	damage func(kc kafka.Config, rs []*replica) []*replica) (schemaNames []string) {
	tb.Helper()
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: partitions})
	if err != nil {
		tb.Fatal(err)
	}
	defer broker.Close()
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "faults"}
	createTopics(ctx, tb, kc)
	// The fills and deposits of the first warmUp go first; each topic's messages keep their order.
	until := eventTs(msgs[0]) + int64(warmUp/time.Second)
	var first, rest []events.Message
	for _, m := range msgs {
		if (m.Topic == events.TopicFills || m.Topic == events.TopicDeposits) && eventTs(m) < until {
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	rs := startMesh(tb, pool, kc, names...)
	w := kc.NewWriter("")
	defer w.Close()
	if err := (kafka.Producer{W: w}).Write(ctx, first...); err != nil {
		tb.Fatal(err)
	}
	waitCaughtUp(ctx, tb, pool, kc, rs...)
	if damage == nil {
		if err := (kafka.Producer{W: w}).Write(ctx, rest...); err != nil {
			tb.Fatal(err)
		}
	} else {
		produced, damaged := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(produced)
			// Arrivals for as long as the damage lasts, then the rest at once.
			produce(ctx, tb, kc, rest, 10, 50*time.Millisecond, damaged)
		}()
		rs = damage(kc, rs)
		close(damaged)
		<-produced
	}
	waitCaughtUp(ctx, tb, pool, kc, rs...)
	settle(ctx, tb, pool, rs...)
	stopAll(tb, rs)
	return schemas(rs...)
}

// eventTs is a message's event time, from its value's ts field.
func eventTs(m events.Message) int64 {
	var v struct {
		Ts int64 `json:"ts"`
	}
	_ = json.Unmarshal(m.Value, &v)
	return v.Ts
}

// soakRounds is how many rounds of damage a test does: n, or TIDEMARK_SOAK_ROUNDS when set (make
// soak runs many more than make test has time for).
func soakRounds(n int) int {
	if v, err := strconv.Atoi(os.Getenv("TIDEMARK_SOAK_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return n
}
