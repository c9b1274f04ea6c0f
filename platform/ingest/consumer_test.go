package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/platform/telemetry"
)

func testConfig() ingest.Config {
	return ingest.Config{
		Group:      "test-ingest",
		Schema:     "test",
		BatchSize:  500,
		BatchWait:  20 * time.Millisecond,
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	}
}

func newConsumer(tb testing.TB, pool *pgxpool.Pool, kc kafka.Config, reg prometheus.Registerer, sinks ...ingest.Sink) *ingest.Consumer {
	tb.Helper()
	c, err := ingest.NewConsumer(testConfig(), ingest.Deps{Pool: pool, Kafka: kc, Registerer: reg}, sinks)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func TestConsumerIngestsReplayedBatchOnce(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool)
	var commits atomic.Int64
	rig.c.OnCommit(func(context.Context) { commits.Add(1) })
	if err := rig.c.Ready(); err == nil {
		t.Error("ready before Run")
	}
	r := start(t, rig.c)

	batch := genItems(0, 1200)
	produceItems(t, rig.kc, batch)
	produceItems(t, rig.kc, batch) // the same batch delivered twice
	produceItems(t, rig.kc, genItems(1200, 300))
	waitRows(t, pool, 1500, 20*time.Second)
	eventually(t, 10*time.Second, func() (bool, string) {
		n := kittest.Metric(t, rig.reg, "tidemark_ingest_messages_total", map[string]string{"topic": itemsTopic})
		return n == 2700, fmt.Sprintf("messages_total = %v", n)
	})
	eventually(t, 5*time.Second, func() (bool, string) { err := rig.c.Ready(); return err == nil, fmt.Sprint(err) })
	if got := rig.sink.inserted.Load(); got != 1500 {
		t.Errorf("Insert reported %d new records, want 1500", got)
	}
	if commits.Load() == 0 {
		t.Error("OnCommit hook never ran")
	}
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_ready", nil); v != 1 {
		t.Errorf("ready gauge = %v", v)
	}
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_batch_size", nil); v == 0 {
		t.Error("no batch observed")
	}
	for p := range 2 {
		if v := kittest.Metric(t, rig.reg, "tidemark_ingest_lag", map[string]string{"topic": itemsTopic, "partition": strconv.Itoa(p)}); v != 0 {
			t.Errorf("lag of partition %d = %v after catching up", p, v)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	// Every partition's last offset is stored with the rows.
	var stored int64
	if err := pool.QueryRow(context.Background(), `SELECT sum("offset" + 1) FROM test.kafka_offsets WHERE consumer_group = $1`, testConfig().Group).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != 2700 {
		t.Errorf("stored offsets cover %d messages, want 2700", stored)
	}

	// A clean stop committed to Kafka as well: a restarted consumer gets nothing again.
	written := rig.sink.written.Load()
	var s2 itemSink
	c2 := newConsumer(t, pool, rig.kc, nil, s2.sink())
	r2 := start(t, c2)
	produceItems(t, rig.kc, genItems(1500, 10))
	waitRows(t, pool, 1510, 20*time.Second)
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := s2.written.Load(); got != 10 {
		t.Errorf("after restart the sink got %d records, want only the 10 new ones (first run wrote %d)", got, written)
	}
}

func TestConsumerCrashBetweenDBAndKafkaCommit(t *testing.T) {
	pool := newItemsPool(t)
	kc := startBroker(t)

	produceItems(t, kc, genItems(0, 400))
	var s1 itemSink
	c1 := newConsumer(t, pool, kc, nil, s1.sink())
	crash := errors.New("crash after the Postgres commit")
	ingest.SetAfterDBCommit(c1, func(context.Context) error { return crash })
	r1 := start(t, c1)
	select {
	case err := <-r1.done:
		r1.done <- err
		if !errors.Is(err, crash) {
			t.Fatalf("Run = %v, want the injected crash", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("consumer never committed a batch")
	}
	firstBatch := int(s1.written.Load())
	if firstBatch == 0 {
		t.Fatal("nothing written before the crash")
	}
	waitRows(t, pool, firstBatch, time.Second)

	// Kafka never saw the commit, but the restarted consumer reads from the offsets stored in
	// Postgres: nothing written before the crash is read again.
	produceItems(t, kc, genItems(400, 100))
	var s2 itemSink
	reg := prometheus.NewRegistry()
	c2 := newConsumer(t, pool, kc, reg, s2.sink())
	r2 := start(t, c2)
	waitRows(t, pool, 500, 20*time.Second)
	if v := kittest.Metric(t, reg, "tidemark_ingest_messages_total", nil); v != float64(500-firstBatch) {
		t.Errorf("messages_total = %v, want the %d messages not committed before the crash", v, 500-firstBatch)
	}
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := s1.written.Load() + s2.written.Load(); got != 500 {
		t.Errorf("sinks got %d records in total (%d before the crash), want 500: replayed messages reached the sink",
			got, firstBatch)
	}
}

func TestConsumerMalformedToDLQ(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool)
	start(t, rig.c)

	good := genItems(0, 4)
	bad := map[string]string{ // value -> expected part of the reason
		`{"ts":1,"txSig":"x"`: "unexpected EOF",
		`{"ts":1795000000,"txSig":"bad1","txSigIndex":0,"id":"1","amount":"1.5"}`:            `amount "1.5" is not an integer decimal`,
		`{"ts":1795000000,"txSig":"bad2","txSigIndex":0,"id":"1","amount":"1","extra":true}`: `unknown field "extra"`,
	}
	var values [][]byte
	for _, it := range good[:2] {
		values = append(values, it.encode())
	}
	for v := range bad {
		values = append(values, []byte(v))
	}
	for _, it := range good[2:] {
		values = append(values, it.encode())
	}
	// One partition keeps the bad messages between good ones.
	produceToPartition0(t, rig.kc, values...)

	waitRows(t, pool, 4, 20*time.Second)
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_dlq_total", map[string]string{"topic": itemsTopic}); v != 3 {
		t.Errorf("dlq_total = %v, want 3", v)
	}

	for _, m := range readDLQ(t, rig.kc, len(bad)) {
		want, ok := bad[string(m.Value)]
		if !ok {
			t.Errorf("unexpected DLQ message %s", m.Value)
			continue
		}
		delete(bad, string(m.Value))
		reason, _ := kafka.Header(m, ingest.HeaderDLQReason)
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q, want it to contain %q", reason, want)
		}
		for k, v := range map[string]string{ingest.HeaderDLQTopic: itemsTopic, ingest.HeaderDLQPartition: "0", "event-type": "item"} {
			if got, _ := kafka.Header(m, k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		if off, _ := kafka.Header(m, ingest.HeaderDLQOffset); off != "2" && off != "3" && off != "4" {
			t.Errorf("dlq-offset = %q, want 2..4", off)
		}
	}
}

func TestConsumerWaitsForPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A cluster of its own: pausing the shared one would disturb other packages' tests.
	own, pool := kittest.OwnPostgres(t, ctx, "ingest", "")
	rig := newItemsRig(t, pool)
	r := start(t, rig.c)

	produceItems(t, rig.kc, genItems(0, 300))
	waitRows(t, pool, 300, 20*time.Second)
	eventually(t, 5*time.Second, func() (bool, string) { err := rig.c.Ready(); return err == nil, fmt.Sprint(err) })

	if err := own.Pause(); err != nil {
		t.Fatal(err)
	}
	produceItems(t, rig.kc, genItems(300, 700))
	eventually(t, 10*time.Second, func() (bool, string) {
		return rig.c.Ready() != nil && kittest.Metric(t, rig.reg, "tidemark_ingest_ready", nil) == 0, "still ready with Postgres down"
	})
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_retries_total", nil); v == 0 {
		t.Error("no retries counted")
	}
	if err := own.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	waitRows(t, pool, 1000, 20*time.Second)
	eventually(t, 5*time.Second, func() (bool, string) { err := rig.c.Ready(); return err == nil, fmt.Sprint(err) })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_messages_total", map[string]string{"topic": itemsTopic}); v != 1000 {
		t.Errorf("messages_total = %v, want 1000", v)
	}
}

// TestConsumerWritersProgressIndependently: each writer has its own partitions and connection, so
// a partition whose writer is stuck in Postgres holds up only itself, and once freed it loses and
// doubles nothing.
func TestConsumerWritersProgressIndependently(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool) // testConfig: the default two writers
	// Partition 0's offset row, locked by another transaction: its writer waits on it inside its
	// first batch's transaction.
	if _, err := pool.Exec(ctx, `INSERT INTO test.kafka_offsets (consumer_group, topic, partition, "offset") VALUES ($1, $2, 0, -1)`,
		testConfig().Group, itemsTopic); err != nil {
		t.Fatal(err)
	}
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = blocker.Rollback(ctx) }()
	if _, err := blocker.Exec(ctx, `SELECT 1 FROM test.kafka_offsets WHERE partition = 0 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	start(t, rig.c)
	items := genItems(0, 1200)
	encode := func(items []item) [][]byte {
		out := make([][]byte, len(items))
		for i, it := range items {
			out[i] = it.encode()
		}
		return out
	}
	produceToPartition(t, rig.kc, 0, encode(items[:600])...)
	produceToPartition(t, rig.kc, 1, encode(items[600:])...)
	// Partition 1's 600 items, in batches of 500, arrive while partition 0's wait.
	waitRows(t, pool, 600, 20*time.Second)
	time.Sleep(200 * time.Millisecond)
	if n, _ := countRows(t, pool); n != 600 {
		t.Fatalf("%d rows while partition 0 is blocked, want partition 1's 600", n)
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitRows(t, pool, 1200, 20*time.Second)
	var offsets []int64
	rows, err := pool.Query(ctx, `SELECT "offset" FROM test.kafka_offsets ORDER BY partition`)
	if err == nil {
		offsets, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil || !slices.Equal(offsets, []int64{599, 599}) {
		t.Errorf("stored offsets %v (%v), want [599 599]", offsets, err)
	}
}

func TestNewConsumerValidates(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	kc := kafka.Config{Brokers: []string{"127.0.0.1:1"}}
	var s itemSink
	sink := s.sink()
	tests := []struct {
		name  string
		cfg   func(*ingest.Config)
		pool  *pgxpool.Pool
		kc    kafka.Config
		sinks []ingest.Sink
		want  string
	}{
		{"no group", func(c *ingest.Config) { c.Group = "" }, pool, kc, []ingest.Sink{sink}, "Group"},
		{"no schema", func(c *ingest.Config) { c.Schema = "" }, pool, kc, []ingest.Sink{sink}, "Schema"},
		{"no pool", func(*ingest.Config) {}, nil, kc, []ingest.Sink{sink}, "pool"},
		{"no brokers", func(*ingest.Config) {}, pool, kafka.Config{}, []ingest.Sink{sink}, "brokers"},
		{"no sinks", func(*ingest.Config) {}, pool, kc, nil, "sinks"},
		{"two sinks for a topic", func(*ingest.Config) {}, pool, kc, []ingest.Sink{sink, sink}, "two sinks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.cfg(&cfg)
			_, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: tt.pool, Kafka: tt.kc}, tt.sinks)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
	// Out-of-range knobs are refused, naming their variables.
	for _, tt := range []struct {
		cfg  func(*ingest.Config)
		want string
	}{
		{func(c *ingest.Config) { c.Writers = 17 }, "TIDEMARK_INGEST_WRITERS must be 1..16, got 17"},
		{func(c *ingest.Config) { c.BatchSize = -1 }, "TIDEMARK_INGEST_BATCH_SIZE"},
		{func(c *ingest.Config) { c.BatchWait = time.Hour }, "TIDEMARK_INGEST_BATCH_WAIT"},
	} {
		cfg := testConfig()
		tt.cfg(&cfg)
		if _, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc}, []ingest.Sink{sink}); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("err = %v, want %q", err, tt.want)
		}
	}
}

// TestConsumersOfTwoServicesShareARegistry: the dev stack runs every service in one process with one
// registry; each registers through its service label, and each one's counts stay its own.
func TestConsumersOfTwoServicesShareARegistry(t *testing.T) {
	pool := newItemsPool(t)
	kc := startBroker(t)
	reg := prometheus.NewRegistry()
	var a, b itemSink
	ca, err := ingest.NewConsumer(testConfig(), ingest.Deps{Pool: pool, Kafka: kc, Registerer: telemetry.ServiceRegisterer(reg, "market")}, []ingest.Sink{a.sink()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Group = "other"
	cb, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc, Registerer: telemetry.ServiceRegisterer(reg, "user")}, []ingest.Sink{b.sink()})
	if err != nil {
		t.Fatal(err)
	}
	produceItems(t, kc, genItems(0, 30))
	ra, rb := start(t, ca), start(t, cb)
	eventually(t, 20*time.Second, func() (bool, string) {
		return a.written.Load() == 30 && b.written.Load() == 30, ""
	})
	for _, r := range []*running{ra, rb} {
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
	}
	for _, svc := range []string{"market", "user"} {
		if v := kittest.Metric(t, reg, "tidemark_ingest_messages_total", map[string]string{"service": svc, "topic": itemsTopic}); v != 30 {
			t.Errorf("service %s counted %v messages, want 30", svc, v)
		}
	}
}

func TestConsumerRetriesWhenDLQFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool)
	dlqTopic := ingest.DLQTopic(itemsTopic)
	if err := kafka.EnsureTopics(ctx, rig.kc.Brokers, 1, dlqTopic); err != nil {
		t.Fatal(err)
	}
	setMaxBytes := func(n int) {
		t.Helper()
		resp, err := (&kafkago.Client{Addr: kafkago.TCP(rig.kc.Brokers...)}).AlterConfigs(ctx, &kafkago.AlterConfigsRequest{
			Resources: []kafkago.AlterConfigRequestResource{{
				ResourceType: kafkago.ResourceTypeTopic, ResourceName: dlqTopic,
				Configs: []kafkago.AlterConfigRequestConfig{{Name: "max.message.bytes", Value: strconv.Itoa(n)}},
			}},
		})
		if err == nil {
			for _, e := range resp.Errors {
				err = errors.Join(err, e)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setMaxBytes(10) // nothing fits: every DLQ write fails

	start(t, rig.c)
	items := genItems(0, 2)
	// One partition, so one writer's batch holds the broken message and both items.
	produceToPartition0(t, rig.kc, items[0].encode(), []byte(`{"broken":`), items[1].encode())

	eventually(t, 20*time.Second, func() (bool, string) {
		n := kittest.Metric(t, rig.reg, "tidemark_ingest_retries_total", nil)
		return n >= 2 && rig.c.Ready() != nil, fmt.Sprintf("retries %v, ready %v", n, rig.c.Ready())
	})
	if n, _ := countRows(t, pool); n != 0 {
		t.Fatalf("%d rows committed although the DLQ write failed", n)
	}
	setMaxBytes(1 << 20)
	waitRows(t, pool, 2, 20*time.Second)
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_dlq_total", map[string]string{"topic": itemsTopic}); v != 1 {
		t.Errorf("dlq_total = %v, want 1", v)
	}
}

// TestConsumerRefusedValuesToDLQ: records that decode but that Postgres, or the COPY encoder, cannot
// store go to the DLQ with the refusal as reason, while every other record of their batches is
// stored, and the partition moves on.
func TestConsumerRefusedValuesToDLQ(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool)

	good := genItems(0, 1200)
	refused := map[string]string{} // txSig -> expected part of the reason
	bad := func(i int, reason string, change func(*item)) {
		it := good[i]
		change(&it)
		good[i] = it
		refused[it.TxSig+"/"+strconv.Itoa(it.TxSigIndex)] = reason
	}
	bad(10, "invalid byte sequence", func(it *item) { it.Note = "nul \x00 byte" })                // text cannot hold NUL (22021)
	bad(611, "no partition", func(it *item) { it.Ts = base.AddDate(1, 0, 0).Unix() })             // no month partition (23514)
	bad(1001, "out of range for type integer", func(it *item) { it.TxSigIndex = 1 << 40 })        // the COPY encoder's range check
	bad(1002, "out of range for type integer", func(it *item) { it.TxSigIndex = -(1 << 40) - 1 }) // the same batch, next to it
	// One partition: the refused records sit between good ones of the same batches.
	values := make([][]byte, len(good))
	for i, it := range good {
		values[i] = it.encode()
	}
	produceToPartition0(t, rig.kc, values...)
	start(t, rig.c)

	waitRows(t, pool, len(good)-len(refused), 30*time.Second)
	eventually(t, 10*time.Second, func() (bool, string) {
		err := rig.c.Ready()
		return err == nil, fmt.Sprint(err)
	})
	if v := kittest.Metric(t, rig.reg, "tidemark_ingest_dlq_total", map[string]string{"topic": itemsTopic}); v != float64(len(refused)) {
		t.Errorf("dlq_total = %v, want %d", v, len(refused))
	}
	var stored int
	if err := pool.QueryRow(context.Background(), `SELECT "offset" FROM test.kafka_offsets WHERE partition = 0`).Scan(&stored); err != nil || stored != len(good)-1 {
		t.Errorf("stored offset %d (%v), want %d: the partition must move past the refused records", stored, err, len(good)-1)
	}

	for _, m := range readDLQ(t, rig.kc, len(refused)) {
		var it item
		if err := json.Unmarshal(m.Value, &it); err != nil {
			t.Fatal(err)
		}
		key := it.TxSig + "/" + strconv.Itoa(it.TxSigIndex)
		want, ok := refused[key]
		if !ok {
			t.Errorf("DLQ holds %s, which Postgres takes", m.Value)
			continue
		}
		delete(refused, key)
		if reason, _ := kafka.Header(m, ingest.HeaderDLQReason); !strings.Contains(reason, want) {
			t.Errorf("%s: reason %q, want it to contain %q", key, reason, want)
		}
	}
}

// TestTopicsKeyedAlikeShareAWriter: partition p of every topic goes to one writer, so the topics of
// one thing, keyed and partitioned alike (an account's orders and its actions), are written by one
// transaction at a time and never lock the rows they share in opposite orders from two writers.
// Each partition's messages are there before the consumer starts, so that every writer's first batch
// holds all of its partitions, of both topics, and one transaction writes them.
func TestTopicsKeyedAlikeShareAWriter(t *testing.T) {
	ctx := context.Background()
	pool := newItemsPool(t)
	topics := []string{"orders", "actions"}
	e, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: 2, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	kc := kafka.Config{Brokers: e.Brokers(), ClientID: t.Name()}
	for _, topic := range topics {
		w := kc.NewWriter(topic)
		w.Balancer = kafkago.BalancerFunc(func(m kafkago.Message, _ ...int) int { return int(m.Key[0] - '0') })
		var msgs []kafkago.Message
		for p := range 2 {
			for range 5 {
				msgs = append(msgs, kafkago.Message{Key: []byte{byte('0' + p)}, Value: []byte(fmt.Sprint(p))})
			}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}

	var mu sync.Mutex
	txOf := map[string]map[int64]bool{} // "topic/partition" -> the transactions that wrote it
	sink := func(topic string) ingest.Sink {
		return ingest.NewSink(topic, func(m ingest.Message) (string, error) { return string(m.Value), nil },
			func(ctx context.Context, tx pgx.Tx, parts []string) error {
				var id int64
				if err := tx.QueryRow(ctx, "SELECT txid_current()").Scan(&id); err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				for _, p := range parts {
					k := topic + "/" + p
					if txOf[k] == nil {
						txOf[k] = map[int64]bool{}
					}
					txOf[k][id] = true
				}
				return nil
			})
	}
	cfg := testConfig()
	cfg.BatchWait = time.Second
	c, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc, Registerer: prometheus.NewRegistry()},
		[]ingest.Sink{sink("orders"), sink("actions")})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	eventually(t, 20*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(txOf) == 4, fmt.Sprint(txOf)
	})
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"0", "1"} {
		if !maps.Equal(txOf["orders/"+p], txOf["actions/"+p]) {
			t.Errorf("partition %s: orders written by transactions %v, actions by %v", p, txOf["orders/"+p], txOf["actions/"+p])
		}
	}
	for id := range txOf["orders/0"] {
		if txOf["orders/1"][id] {
			t.Errorf("transaction %d wrote both partitions: the two writers did not share them", id)
		}
	}
}

// TestConsumerRetriesABatchFailedBeforeItsCommit: a batch whose attempt fails after its sinks wrote
// (Deps.BeforeCommit) is rolled back and written again from its records, once.
func TestConsumerRetriesABatchFailedBeforeItsCommit(t *testing.T) {
	pool := newItemsPool(t)
	kc := startBroker(t)
	var mu sync.Mutex
	attempts := map[int]int{} // attempt -> how many batches reached it
	s := &itemSink{}
	c, err := ingest.NewConsumer(testConfig(), ingest.Deps{Pool: pool, Kafka: kc, Registerer: prometheus.NewRegistry(),
		BeforeCommit: func(_ context.Context, attempt int) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[attempt]++
			if attempt == 1 {
				return errors.New("injected")
			}
			return nil
		}}, []ingest.Sink{s.sink()})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	produceItems(t, kc, genItems(0, 200))
	waitRows(t, pool, 200, 20*time.Second)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if rows, distinct := countRows(t, pool); rows != 200 || distinct != 200 {
		t.Fatalf("%d rows (%d distinct), want 200", rows, distinct)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts[1] == 0 || attempts[2] != attempts[1] || attempts[3] != 0 {
		t.Fatalf("attempts %v: every batch should fail once and commit at its second", attempts)
	}
	if got := s.written.Load(); got != 2*200 {
		t.Fatalf("the sink was handed %d records, want each of the 200 twice", got)
	}
}
