package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

func TestMain(m *testing.M) {
	// A replica started by a test in a process of its own (kittest.StartReplica).
	if r, ok := kittest.ReplicaFromEnv(); ok {
		os.Exit(runReplica(r))
	}
	os.Exit(pgtest.Main(m))
}

// item is a tiny event: natural key (ts, txSig, txSigIndex, id), amounts as decimal strings.
type item struct {
	Ts         int64   `json:"ts"`
	TxSig      string  `json:"txSig"`
	TxSigIndex int     `json:"txSigIndex"`
	ID         string  `json:"id"`
	Amount     string  `json:"amount"`
	Price      *string `json:"price,omitempty"`
	Note       string  `json:"note,omitempty"`
}

var decimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func decodeItem(m ingest.Message) (item, error) {
	var it item
	d := json.NewDecoder(bytes.NewReader(m.Value))
	d.DisallowUnknownFields()
	if err := d.Decode(&it); err != nil {
		return item{}, fmt.Errorf("decode item: %w", err)
	}
	switch {
	case it.TxSig == "":
		return item{}, errors.New("txSig is required")
	case !decimal.MatchString(it.Amount):
		return item{}, fmt.Errorf("amount %q is not an integer decimal", it.Amount)
	}
	return it, nil
}

func (it item) encode() []byte {
	b, err := json.Marshal(it)
	if err != nil {
		panic(err)
	}
	return b
}

const itemsTopic = "items"

var itemsMigrations = fstest.MapFS{"001_items.sql": {Data: []byte(`
CREATE TABLE items (
	ts bigint NOT NULL,
	tx_sig text NOT NULL,
	tx_sig_index int NOT NULL,
	item_id numeric NOT NULL,
	amount numeric NOT NULL,
	price numeric,
	note text,
	inserted_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (ts, tx_sig, tx_sig_index, item_id)
) PARTITION BY RANGE (ts);`)}}

func itemsTable() ingest.Table[item] {
	return ingest.Table[item]{
		Name:    "test.items",
		Columns: []string{"ts", "tx_sig", "tx_sig_index", "item_id", "amount", "price", "note"},
		Key:     []string{"ts", "tx_sig", "tx_sig_index", "item_id"},
		Row: func(it item) []any {
			return []any{it.Ts, it.TxSig, it.TxSigIndex, it.ID, it.Amount, it.Price, it.Note}
		},
	}
}

// base is a month start; items spread over it and the next month.
var base = time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC)

// newItemsDB returns a fresh database holding test.items with partitions for base's months.
// newItemsPool is a pool on a fresh database of the package's server, with the items table.
func newItemsPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	pool := pgtest.NewPool(tb, pgtest.Server())
	newItemsDB(tb, pool)
	return pool
}

func newItemsDB(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	ctx := context.Background()
	if err := pg.Migrate(ctx, pool, "test", itemsMigrations); err != nil {
		tb.Fatal(err)
	}
	if err := pg.EnsureMonthlyPartitions(ctx, pool, "test.items", base, base.AddDate(0, 2, 0)); err != nil {
		tb.Fatal(err)
	}
}

func genItems(from, n int) []item {
	out := make([]item, n)
	for i := range out {
		k := from + i
		out[i] = item{
			Ts:         base.Unix() + int64(k)*10, // crosses into November after 8640 items
			TxSig:      fmt.Sprintf("sig%06d", k/2),
			TxSigIndex: k % 2,
			ID:         fmt.Sprint(k),
			Amount:     fmt.Sprint(1_500_000 + k),
		}
	}
	return out
}

// itemSink writes items through Table.Insert and counts the records it was handed.
type itemSink struct {
	written  atomic.Int64 // records passed to Write
	inserted atomic.Int64 // records Insert reported as new (including in rolled-back attempts)
	table    ingest.Table[item]
}

func (s *itemSink) sink() ingest.Sink {
	s.table = itemsTable()
	return ingest.NewSink(itemsTopic, decodeItem, func(ctx context.Context, tx pgx.Tx, recs []item) error {
		s.written.Add(int64(len(recs)))
		ins, err := s.table.Insert(ctx, tx, recs)
		s.inserted.Add(int64(len(ins)))
		return err
	})
}

// itemsRig is a consumer of the items topic into pool, on a broker and with metrics of its own.
type itemsRig struct {
	kc   kafka.Config
	reg  *prometheus.Registry
	sink *itemSink
	c    *ingest.Consumer
}

func newItemsRig(tb testing.TB, pool *pgxpool.Pool) itemsRig {
	tb.Helper()
	newItemsDB(tb, pool)
	r := itemsRig{kc: startBroker(tb), reg: prometheus.NewRegistry(), sink: &itemSink{}}
	r.c = newConsumer(tb, pool, r.kc, r.reg, r.sink.sink())
	return r
}

func startBroker(tb testing.TB) kafka.Config {
	tb.Helper()
	e, err := kafka.StartEmbedded(context.Background(), kafka.EmbeddedOptions{Partitions: 2, Topics: []string{itemsTopic}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return kafka.Config{Brokers: e.Brokers(), ClientID: tb.Name()}
}

func produce(tb testing.TB, kc kafka.Config, topic string, values ...[]byte) {
	tb.Helper()
	w := kc.NewWriter(topic)
	defer w.Close()
	msgs := make([]kafkago.Message, len(values))
	for i, v := range values {
		// A key per transaction keeps an item's replays on one partition, as in production.
		var it item
		_ = json.Unmarshal(v, &it)
		msgs[i] = kafkago.Message{Key: []byte(it.TxSig), Value: v}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		tb.Fatal(err)
	}
}

// produceToPartition0 writes values, in order, to partition 0 of the items topic, each with an
// event-type header, so that bad messages sit between good ones of one stream.
func produceToPartition0(tb testing.TB, kc kafka.Config, values ...[]byte) {
	tb.Helper()
	produceToPartition(tb, kc, 0, values...)
}

func produceToPartition(tb testing.TB, kc kafka.Config, partition int, values ...[]byte) {
	tb.Helper()
	w := kc.NewWriter(itemsTopic)
	defer w.Close()
	w.Balancer = kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return partition })
	msgs := make([]kafkago.Message, len(values))
	for i, v := range values {
		msgs[i] = kafkago.Message{Value: v, Headers: []kafkago.Header{{Key: "event-type", Value: []byte("item")}}}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		tb.Fatal(err)
	}
}

// readDLQ reads n messages from the items topic's DLQ, from every partition: each DLQ write may
// land on another.
func readDLQ(tb testing.TB, kc kafka.Config, n int) []kafkago.Message {
	tb.Helper()
	r := kc.NewReader(tb.Name()+"-dlq", []string{ingest.DLQTopic(itemsTopic)})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make([]kafkago.Message, 0, n)
	for range n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			tb.Fatalf("read DLQ message %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, m)
	}
	return out
}

func produceItems(tb testing.TB, kc kafka.Config, items []item) {
	tb.Helper()
	values := make([][]byte, len(items))
	for i, it := range items {
		values[i] = it.encode()
	}
	produce(tb, kc, itemsTopic, values...)
}

// running is a consumer started in the background.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func start(tb testing.TB, c *ingest.Consumer) *running {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- c.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			tb.Error("consumer did not stop")
		}
	})
	return r
}

// stop ends the consumer and returns Run's error.
func (r *running) stop(tb testing.TB) error {
	tb.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		tb.Fatal("consumer did not stop")
		return nil
	}
}

// eventually polls cond until it holds or timeout passes; msg describes the last state.
func eventually(tb testing.TB, timeout time.Duration, cond func() (ok bool, state string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %v: %s", timeout, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countRows(tb testing.TB, pool *pgxpool.Pool) (rows, distinct int) {
	tb.Helper()
	err := pool.QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT (ts, tx_sig, tx_sig_index, item_id)) FROM test.items`).Scan(&rows, &distinct)
	if err != nil {
		tb.Fatal(err)
	}
	return rows, distinct
}

// waitRows waits until test.items holds exactly want rows, with no key twice.
func waitRows(tb testing.TB, pool *pgxpool.Pool, want int, timeout time.Duration) {
	tb.Helper()
	eventually(tb, timeout, func() (bool, string) {
		n, d := countRows(tb, pool)
		return n == want && d == want, fmt.Sprintf("rows %d distinct %d, want %d", n, d, want)
	})
}
