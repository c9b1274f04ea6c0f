package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const topic = "edge.test"

type env struct {
	pool *pgxpool.Pool
	kc   kafka.Config
}

func newEnv(tb testing.TB) env {
	tb.Helper()
	pool := pgtest.NewPool(tb, pgtest.Server())
	if err := pg.Migrate(context.Background(), pool, "svc", nil); err != nil {
		tb.Fatal(err)
	}
	e, err := kafka.StartEmbedded(context.Background(), kafka.EmbeddedOptions{Partitions: 1, Topics: []string{topic}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return env{pool: pool, kc: kafka.Config{Brokers: e.Brokers()}}
}

func msg(v string) events.Message {
	return events.Message{Topic: topic, Key: []byte("SOL-PERP"), Value: []byte(v), Headers: map[string]string{"event-type": "candle"}}
}

// add stores values in one transaction, committed or rolled back.
func (e env) add(tb testing.TB, ctx context.Context, commit bool, values ...string) {
	tb.Helper()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	msgs := make([]events.Message, len(values))
	for i, v := range values {
		msgs[i] = msg(v)
	}
	if err := outbox.Add(ctx, tx, "svc", msgs...); err != nil {
		tb.Fatal(err)
	}
	if commit {
		if err := tx.Commit(ctx); err != nil {
			tb.Fatal(err)
		}
	}
}

func (e env) pending(tb testing.TB) int {
	tb.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM svc.outbox`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// run starts a publisher and returns a function stopping it.
func (e env) run(tb testing.TB, w *kafkago.Writer) (*outbox.Publisher, *prometheus.Registry, func()) {
	return e.runNamed(tb, kafka.Producer{W: w})
}

// runNamed is run with out's naming of the topics.
func (e env) runNamed(tb testing.TB, out kafka.Producer) (*outbox.Publisher, *prometheus.Registry, func()) {
	tb.Helper()
	reg := prometheus.NewRegistry()
	p, err := outbox.NewPublisher(outbox.Config{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}, e.pool, "svc", out, nil, reg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			tb.Error("publisher did not stop")
		}
	})
	tb.Cleanup(stop)
	return p, reg, stop
}

// read returns the next n messages of the topic.
func (e env) read(tb testing.TB, r *kafkago.Reader, n int) []kafkago.Message {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []kafkago.Message
	for range n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("after %d of %d messages: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

func (e env) reader(tb testing.TB) *kafkago.Reader {
	tb.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: e.kc.Brokers, Topic: topic, MaxWait: 50 * time.Millisecond})
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

func values(msgs []kafkago.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}

func waitEmpty(tb testing.TB, e env) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.pending(tb) != 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("outbox still holds %d rows", e.pending(tb))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPublishesUnderTheReleasePrefix: rows name the mesh's topic; a release with a topic prefix
// publishes them to its own topic, whose readers see them in order.
func TestPublishesUnderTheReleasePrefix(t *testing.T) {
	e := newEnv(t)
	naming := kafka.Naming{TopicPrefix: "staging."}
	e.add(t, context.Background(), true, "1", "2", "3")
	w := e.kc.NewWriter("")
	defer w.Close()
	e.runNamed(t, kafka.Producer{W: w, Naming: naming})
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: e.kc.Brokers, Topic: naming.Topic(topic), MaxWait: 50 * time.Millisecond})
	t.Cleanup(func() { _ = r.Close() })
	got := e.read(t, r, 3)
	if v := values(got); !slices.Equal(v, []string{"1", "2", "3"}) || got[0].Topic != "staging."+topic {
		t.Fatalf("read %v from %s", v, got[0].Topic)
	}
	waitEmpty(t, e)
}

func TestPublishesCommittedInOrder(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))

	e.add(t, traced, true, "1", "2", "3")
	e.add(t, ctx, false, "rolled-back-1", "rolled-back-2")
	e.add(t, ctx, true, "4")
	var batch []string
	for i := 5; i <= 1200; i++ { // more than one drain batch
		batch = append(batch, fmt.Sprint(i))
	}
	e.add(t, ctx, true, batch...)

	w := e.kc.NewWriter("")
	defer w.Close()
	_, _, stop := e.run(t, w)
	r := e.reader(t)
	got := e.read(t, r, 1200)
	var want []string
	for i := 1; i <= 1200; i++ {
		want = append(want, fmt.Sprint(i))
	}
	if !slices.Equal(values(got), want) {
		t.Errorf("published out of order or with rolled-back rows: %v...", values(got)[:10])
	}
	first := got[0]
	if tp, _ := kafka.Header(first, "traceparent"); tp != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent = %q", tp)
	}
	if et, _ := kafka.Header(first, "event-type"); et != "candle" || string(first.Key) != "SOL-PERP" {
		t.Errorf("event-type %q key %q", et, first.Key)
	}
	waitEmpty(t, e)

	// Rows added while running go out on Wake.
	p2, _, stop2 := e.run(t, w)
	stop()
	e.add(t, ctx, true, "after")
	p2.Wake()
	if got := values(e.read(t, r, 1)); got[0] != "after" {
		t.Errorf("got %v, want [after]", got)
	}
	waitEmpty(t, e)
	stop2()

	// Nothing else, in particular no rolled-back row, ever reaches the topic.
	ctxShort, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if m, err := r.ReadMessage(ctxShort); err == nil {
		t.Errorf("unexpected message %q", m.Value)
	}
}

func TestPendingRowsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	e.add(t, ctx, true, "a", "b", "c")

	// A publisher that cannot reach Kafka keeps the rows and retries.
	dead := kafka.Config{Brokers: []string{"127.0.0.1:1"}}.NewWriter("")
	dead.MaxAttempts = 1
	defer dead.Close()
	_, reg, stop := e.run(t, dead)
	deadline := time.Now().Add(10 * time.Second)
	for failures(t, reg) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("publisher never failed against a dead broker")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if n := e.pending(t); n != 3 {
		t.Fatalf("pending = %d after failed publishing, want 3", n)
	}

	w := e.kc.NewWriter("")
	defer w.Close()
	_, reg2, stop2 := e.run(t, w)
	defer stop2()
	if got := values(e.read(t, e.reader(t), 3)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("published %v", got)
	}
	waitEmpty(t, e)
	if n := kittest.Metric(t, reg2, "tidemark_outbox_published_total", nil); n != 3 {
		t.Errorf("published_total = %v, want 3", n)
	}
}

func failures(tb testing.TB, reg *prometheus.Registry) float64 {
	tb.Helper()
	return kittest.Metric(tb, reg, "tidemark_outbox_failures_total", nil)
}

func TestAddRejectsMessageWithoutTopic(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		return outbox.Add(ctx, tx, "svc", events.Message{Value: []byte("x")})
	})
	if err == nil {
		t.Error("want an error")
	}
}

func inChannel(channel, v string) events.Message { return events.InChannel(msg(v), channel) }

func seqOf(tb testing.TB, m kafkago.Message) string {
	tb.Helper()
	s, _ := kafka.Header(m, events.HeaderEdgeSeq)
	return s
}

// TestNumbersEachChannel: the messages of a channel are numbered 1, 2, 3... across transactions, a
// rolled-back transaction gives its numbers back, messages without a channel get none, and two
// transactions numbering one channel at once get consecutive numbers in their commit order, which is
// also the order the publisher sends them in.
func TestNumbersEachChannel(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	addTx := func(commit bool, msgs ...events.Message) {
		t.Helper()
		err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			if err := outbox.Add(ctx, tx, "svc", msgs...); err != nil {
				return err
			}
			if !commit {
				return errRollback
			}
			return nil
		})
		if err != nil && (commit || err != errRollback) {
			t.Fatal(err)
		}
	}
	addTx(true, inChannel("candle:SOL-PERP:1", "a1"), inChannel("candle:SOL-PERP:5", "b1"), inChannel("candle:SOL-PERP:1", "a2"), msg("plain"))
	addTx(false, inChannel("candle:SOL-PERP:1", "lost"))
	addTx(true, inChannel("candle:SOL-PERP:1", "a3"))

	// Two transactions on one channel: the second waits on the counter row until the first commits.
	first, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(ctx) }()
	if err := outbox.Add(ctx, first, "svc", inChannel("candle:SOL-PERP:1", "a4"), inChannel("markets:summary", "m1")); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		second <- pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			return outbox.Add(ctx, tx, "svc", inChannel("markets:summary", "m2"), inChannel("candle:SOL-PERP:1", "a5"))
		})
	}()
	select {
	case err := <-second:
		t.Fatalf("the second transaction numbered the channel while the first held it: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := first.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}

	seqs, err := outbox.Seqs(ctx, e.pool, "svc", "candle:")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"candle:SOL-PERP:1": 5, "candle:SOL-PERP:5": 1}; !maps.Equal(seqs, want) {
		t.Errorf("Seqs(candle:) = %v, want %v", seqs, want)
	}
	for channel, want := range map[string]int64{"candle:SOL-PERP:1": 5, "markets:summary": 2, "candle:SOL-PERP": 0} {
		if seq, err := outbox.Seq(ctx, e.pool, "svc", channel); err != nil || seq != want {
			t.Errorf("Seq(%s) = %d, %v, want %d", channel, seq, err, want)
		}
	}

	w := e.kc.NewWriter("")
	defer w.Close()
	e.run(t, w)
	got := e.read(t, e.reader(t), 9)
	var lines []string
	for _, m := range got {
		c, _ := kafka.Header(m, events.HeaderEdgeChannel)
		lines = append(lines, fmt.Sprintf("%s %s %s", m.Value, c, seqOf(t, m)))
	}
	want := []string{
		"a1 candle:SOL-PERP:1 1", "b1 candle:SOL-PERP:5 1", "a2 candle:SOL-PERP:1 2", "plain  ",
		"a3 candle:SOL-PERP:1 3",
		"a4 candle:SOL-PERP:1 4", "m1 markets:summary 1",
		"m2 markets:summary 2", "a5 candle:SOL-PERP:1 5",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("published\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

var errRollback = errors.New("roll back")

// TestConcurrentNumbering: many transactions numbering overlapping channels at once, in different
// orders, never deadlock and leave every channel numbered 1..n without a hole or a repeat.
func TestConcurrentNumbering(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	channels := []string{"notifications:a", "notifications:b", "notifications:c"}
	const workers, rounds = 6, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				var msgs []events.Message
				for i := range channels {
					c := channels[(w+r+i)%len(channels)]
					msgs = append(msgs, inChannel(c, fmt.Sprintf("%d-%d", w, r)))
				}
				if err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error { return outbox.Add(ctx, tx, "svc", msgs...) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rows, err := e.pool.Query(ctx, `SELECT headers->>'edge-channel', (headers->>'edge-seq')::bigint FROM svc.outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	var c string
	var s int64
	if _, err := pgx.ForEachRow(rows, []any{&c, &s}, func() error {
		if s != last[c]+1 {
			t.Errorf("%s: %d after %d in id order", c, s, last[c])
		}
		last[c] = s
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range channels {
		if last[c] != workers*rounds {
			t.Errorf("%s ends at %d, want %d", c, last[c], workers*rounds)
		}
	}
}
