package bench_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	marketpg "github.com/tidemark/tidemark/services/market/postgres"
	market "github.com/tidemark/tidemark/services/market/service"
	userpg "github.com/tidemark/tidemark/services/user/postgres"
	user "github.com/tidemark/tidemark/services/user/service"
	"github.com/tidemark/tidemark/tools/sim"
)

const ingestFills = 300_000

var errEnough = errors.New("enough")

// simulatedFills returns n fill messages of the simulator, the same in every run.
func simulatedFills(b *testing.B, n int) []events.Message {
	b.Helper()
	cfg := sim.DefaultConfig()
	cfg.FillsPerMinute = 3000
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return end }
	s := sim.New(cfg)
	out := make([]events.Message, 0, n)
	err := s.Generate(end.Add(-72*time.Hour), end, func(m events.Message) error {
		if m.Topic != events.TopicFills {
			return nil
		}
		out = append(out, m)
		if len(out) == n {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		b.Fatalf("simulate: %v", err)
	}
	if len(out) < n {
		b.Fatalf("simulator gave %d fills, want %d", len(out), n)
	}
	return out
}

// ingestRounds alternates baseline and ingest runs: this machine's other tenants slow any single run
// by up to half, and the best of several runs of each side is what each can do.
const ingestRounds = 5

var ingestWriters = flag.Int("bench.writers", ingest.DefaultWriters, "the ingest benchmarks' W: writers of the service against as many raw COPY streams")

var ingestProfile = flag.String("bench.ingestprofile", "", "write a CPU profile of the last round's ingest (the whole process while the consumer runs) to this file, suffixed with the service's name")

// ingestCase is one service's fill ingest: where its rows go and how they are made.
type ingestCase struct {
	name    string
	svc     kit.Service
	schema  string
	table   string   // the table the rows of the fills go to
	columns []string // its columns, as the service's ingest.Table writes them
	// rows are the rows the service's first ingest of msgs writes into table, built as its sink
	// builds them, each with the index of its message.
	rows  func(b *testing.B, msgs []events.Message) (rows [][]any, msg []int)
	empty string // the statement emptying what the ingest writes
	// setup, when set, prepares the migrated schema once, before any phase (what the service knows
	// before the fills arrive).
	setup func(b *testing.B, pool *pgxpool.Pool)
}

func ingestCases() []ingestCase {
	decode := func(b *testing.B, sinks []ingest.Sink, m events.Message) any {
		for _, s := range sinks {
			if s.Topic() == events.TopicFills {
				r, err := s.Decode(ingest.Message{Topic: m.Topic, Key: m.Key, Value: m.Value})
				if err != nil {
					b.Fatalf("decode: %v", err)
				}
				return r
			}
		}
		b.Fatal("no sink of fills")
		return nil
	}
	marketTable, userTable := marketpg.FillsTable("market"), userpg.FillsTable("users")
	return []ingestCase{
		{
			name: "market", svc: market.Service(market.Config{}), schema: "market", table: "fills", columns: marketTable.Columns,
			rows: func(b *testing.B, msgs []events.Message) ([][]any, []int) {
				// The service's default edge window: the simulated fills are weeks old, so the ingest
				// publishes no candle change.
				sinks := marketpg.NewIngest("market", market.DefaultEdgeWindow, time.Now).Sinks()
				out, of := make([][]any, len(msgs)), make([]int, len(msgs))
				for i, m := range msgs {
					out[i], of[i] = marketTable.Row(decode(b, sinks, m).(marketpg.StoredFill)), i
				}
				return out, of
			},
			empty: "TRUNCATE market.fills, market.candles, market.markets",
		},
		{
			name: "user", svc: user.Service(), schema: "users", table: "fills", columns: userTable.Columns,
			rows: func(b *testing.B, msgs []events.Message) ([][]any, []int) {
				evs := make([]ingest.Event[*events.Fill], len(msgs))
				msgOf := make(map[*events.Fill]int, len(msgs))
				for i, m := range msgs {
					r, err := events.Decode(m.Topic, m.Value)
					if err != nil {
						b.Fatal(err)
					}
					evs[i] = ingest.Event[*events.Fill]{Record: r.(*events.Fill), JSON: m.Value}
					msgOf[evs[i].Record] = i
				}
				rows, err := userpg.BaselineRows(evs)
				if err != nil {
					b.Fatal(err)
				}
				out, of := make([][]any, len(rows)), make([]int, len(rows))
				for i, r := range rows {
					out[i], of[i] = userTable.Row(r), msgOf[r.Fill]
				}
				return out, of
			},
			empty: "TRUNCATE users.fills, users.position_state, users.markets",
		},
	}
}

// BenchmarkIngestFills measures each service's fill ingest from the broker into its schema (decode,
// validate, COPY, candles at 8 resolutions for market, both accounts' rows and their closed positions
// for user, offsets, Kafka commit) with ingest.DefaultWriters writers, against ingest.DefaultWriters
// concurrent raw COPY streams of the same rows into the same table on as many connections, in
// alternating rounds of the same run. Each stream copies the rows its writer writes: fills are keyed
// by market, and the busiest market's partition bounds both sides alike. Postgres and this process
// share the machine's CPUs unless -bench.cpus=split (splitCPUs). Target: best ingest / best COPY >= 0.8
// for each.
func BenchmarkIngestFills(b *testing.B) {
	for range b.N {
		msgs := simulatedFills(b, ingestFills)
		for _, c := range ingestCases() {
			b.Run(c.name, func(b *testing.B) { benchIngest(b, c, msgs) })
		}
	}
}

func benchIngest(b *testing.B, c ingestCase, msgs []events.Message) {
	ctx := context.Background()
	w := *ingestWriters
	pool := database(b, "bench_ingest_"+c.name, true)
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 3})
	if err != nil {
		b.Fatal(err)
	}
	defer broker.Close()
	// The schema, migrated by a service that is not run.
	startService(b, pool, broker, c.svc, kit.Settings{}, time.Now)
	if c.setup != nil {
		c.setup(b, pool)
	}
	rows, msgOf := c.rows(b, msgs)
	total := len(msgs)
	// The baseline's streams copy what the writers write: partition p of the fills topic goes to
	// writer ingest.WriterOf(p, w), as the consumer sends it.
	streams := make([][][]any, w)
	var hash kafkago.Hash
	for i, row := range rows {
		p := hash.Balance(kafkago.Message{Key: msgs[msgOf[i]].Key}, topicPartitions...)
		s := ingest.WriterOf(p, w)
		streams[s] = append(streams[s], row)
	}
	sizes := make([]int, w)
	for i := range streams {
		sizes[i] = len(streams[i])
	}
	b.Logf("%s: %d fills are %d rows of %s.%s; the writers' (and the COPY streams') shares: %v rows",
		c.name, total, len(rows), c.schema, c.table, sizes)
	// Every phase runs on warm backends, as a running service's connections are.
	warmBackends(b, pool, phaseConns(w), c.schema, c.table, c.columns, rows)
	empty(b, pool, c.empty)

	// The same fills through the broker. Producing is not timed: the figure is the consumer's.
	kc := kafka.Config{Brokers: broker.Brokers()}
	wr := kc.NewWriter("")
	wr.BatchSize, wr.BatchTimeout = 10000, 50*time.Millisecond
	if err := (kafka.Producer{W: wr}).Write(ctx, msgs...); err != nil {
		b.Fatalf("produce: %v", err)
	}
	wr.Close()

	topology := splitCPUs(b)
	var bestCopy, bestIngest float64
	var paired []float64
	for round := 1; round <= ingestRounds; round++ {
		copyRate, copyCPU := copyStreams(b, pool, c, streams, total)
		empty(b, pool, c.empty)
		run := ingestWith(b, pool, broker, c, total, w, round)
		bestCopy, bestIngest = max(bestCopy, copyRate), max(bestIngest, run.rate)
		paired = append(paired, run.rate/copyRate)
		b.Logf("%s round %d: %d concurrent raw COPYs %.0f fills/s (Postgres %s); ingest with %d writers %.0f fills/s (Postgres %s; "+
			"this process on CPU %s, %.2f µs a fill, %d page faults), %.0f fills/s once joined (%s to join); ratio %.2f, %.2f once joined",
			c.name, round, w, copyRate, copyCPU, w, run.rate, run.cpu, run.self.Round(time.Millisecond),
			float64(run.self.Microseconds())/float64(total), run.faults, run.joined, run.join.Round(time.Millisecond), run.rate/copyRate, run.joined/copyRate)
		empty(b, pool, c.empty)
	}
	b.ReportMetric(bestCopy, "copy_fills/s")
	b.ReportMetric(bestIngest, "ingest_fills/s")
	b.ReportMetric(bestIngest/bestCopy, "ratio")
	b.Logf("RESULT %s: %d fills (%d rows), best of %d rounds: %d raw COPY streams %.0f fills/s, ingest with %d writers %.0f fills/s: ratio %s; %s; %s",
		c.name, total, len(rows), ingestRounds, w, bestCopy, w, bestIngest, atLeast(bestIngest/bestCopy, 0.8), spread(paired), topology)
}

// spread describes the ratios of the rounds, each ingest against the baseline of its own round: how
// far the machine's noise moves the headline.
func spread(ratios []float64) string {
	r := slices.Sorted(slices.Values(ratios))
	median := (r[(len(r)-1)/2] + r[len(r)/2]) / 2
	return fmt.Sprintf("the rounds' own ratios %.2f to %.2f, median %.2f", r[0], r[len(r)-1], median)
}

func empty(b *testing.B, pool *pgxpool.Pool, sql string) {
	b.Helper()
	ctx := context.Background()
	for _, s := range []string{sql, "CHECKPOINT"} {
		if _, err := pool.Exec(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}

// topicPartitions are the partitions of the benchmark's topics.
var topicPartitions = []int{0, 1, 2}

// copyStreams COPYs each stream's rows into c's table, the streams concurrent binary COPYs each on a
// connection of its own, and returns the fills per second of the whole (the rows of fills fills).
func copyStreams(b *testing.B, pool *pgxpool.Pool, c ingestCase, streams [][][]any, fills int) (float64, cpuTimes) {
	b.Helper()
	ctx := context.Background()
	w := len(streams)
	collect()
	conns := make([]*pgxpool.Conn, w)
	for i := range conns {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Release()
		conns[i] = conn
	}
	var wg sync.WaitGroup
	errs := make([]error, w)
	pg0 := postgresCPU()
	start := time.Now()
	for i, conn := range conns {
		share := streams[i]
		wg.Go(func() {
			n, err := conn.CopyFrom(ctx, pgx.Identifier{c.schema, c.table}, c.columns, pgx.CopyFromRows(share))
			if err == nil && n != int64(len(share)) {
				err = fmt.Errorf("copied %d rows of %d", n, len(share))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("raw COPY: %v", err)
	}
	return float64(fills) / elapsed.Seconds(), postgresCPU().since(pg0)
}

type ingestRun struct {
	rate   float64       // fills/s from the consumer's start
	joined float64       // fills/s from the moment it had joined its group
	join   time.Duration // from its start to its group join
	cpu    cpuTimes      // Postgres's meanwhile
	self   time.Duration // this process' CPU meanwhile: the consumer's, the broker's and the bench's polling
	faults int64         // this process' minor page faults meanwhile
}

// ingestWith runs c's service with writers writers, as a consumer group of its own, until it has
// consumed total fills from broker into the emptied tables.
func ingestWith(b *testing.B, pool *pgxpool.Pool, broker *kafka.Embedded, c ingestCase, total, writers, round int) ingestRun {
	ctx := context.Background()
	group := fmt.Sprintf("bench-%s-%d", c.name, round)
	svc := startService(b, pool, broker, c.svc, kit.Settings{Ingest: ingest.Config{Group: group, Writers: writers}}, time.Now)
	if *ingestProfile != "" && round == ingestRounds {
		defer startCPUProfile(b, *ingestProfile+"."+c.name)()
	}
	collect()
	pg0 := postgresCPU()
	self0, faults0 := processUsage()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- svc.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Errorf("%s service: %v", c.name, err)
		}
	}()
	// Readiness is the consumer's own state (joined, its Postgres checked): no query, so it is
	// polled closely, and the stored offsets only once it is there.
	joinedAt := start
	for svc.Ready() != nil && time.Since(start) < time.Minute {
		time.Sleep(2 * time.Millisecond)
		joinedAt = time.Now()
	}
	for {
		// The consumer's stored offsets tell progress without scanning the table it is filling.
		var got int
		err := pool.QueryRow(ctx, `SELECT coalesce(sum("offset" + 1), 0) FROM `+pgx.Identifier{c.schema, "kafka_offsets"}.Sanitize()+
			` WHERE consumer_group = $1`, group).Scan(&got)
		if err != nil {
			b.Fatal(err)
		}
		if got >= total {
			break
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%s ingest stalled at %d of %d fills", c.name, got, total)
		}
		// Close enough that the end is not overshot by much; the query is a few rows of an index.
		time.Sleep(10 * time.Millisecond)
	}
	end := time.Now()
	self, faults := processUsage()
	return ingestRun{faults: faults - faults0, rate: float64(total) / end.Sub(start).Seconds(), joined: float64(total) / end.Sub(joinedAt).Seconds(),
		join: joinedAt.Sub(start), cpu: postgresCPU().since(pg0), self: self - self0}
}

// collect runs the collector before a phase is timed, so that no phase pays for the garbage of the
// one before. This process's heap holds gigabytes of benchmark data (the messages, the baseline's
// rows, the embedded broker's log), which puts the collector's goal gigabytes above it: between two
// of its rare collections each phase's allocations would walk fresh pages, hundreds of thousands of
// page faults, where a service's own heap reuses what it freed.
func collect() { runtime.GC() }

// phaseConns is how many connections a phase with w writers holds at once: the ingest's writers, its
// publisher and readiness check, and the benchmark's progress query. The CPU figures count the
// backends that start during a phase, which tell when it is too few.
func phaseConns(w int) int { return w + 3 }

// warmBackends has n connections of pool, new or not and held at once, each COPY rows into the emptied
// table and then write through every page of the shared buffers, so that every phase runs on backends
// that have done its work and written each buffer before, as a long-running service's connections
// have. A backend's first write to a page of the shared buffers is a page fault, which this VM takes
// slowly; both the COPY (heap pages through its ring) and the INSERT (index pages, no ring) are
// needed. Each phase reports its faults, which tell when this is not enough.
func warmBackends(b *testing.B, pool *pgxpool.Pool, n int, schema, table string, columns []string, rows [][]any) {
	b.Helper()
	ctx := context.Background()
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			b.Fatalf("acquire: %v", err)
		}
		conns = append(conns, c)
	}
	target := pgx.Identifier{schema, table}
	for _, c := range conns {
		if _, err := c.Exec(ctx, "TRUNCATE "+target.Sanitize()); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
		if _, err := c.CopyFrom(ctx, target, columns, pgx.CopyFromRows(rows)); err != nil {
			b.Fatalf("warm-up COPY: %v", err)
		}
		for _, q := range []string{
			"CREATE UNLOGGED TABLE public.bench_scratch (n int, pad text)",
			// Rows of about 1 KB, 1.5 times the shared buffers' size.
			`INSERT INTO public.bench_scratch
			 SELECT n, repeat('x', 900) FROM generate_series(1, (pg_size_bytes(current_setting('shared_buffers')) * 3 / 2 / 1024)::int) n`,
			"DROP TABLE public.bench_scratch",
		} {
			if _, err := c.Exec(ctx, q); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
		}
	}
}
