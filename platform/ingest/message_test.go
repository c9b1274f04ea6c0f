package ingest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
)

// TestConsumerSchemaVersion: a message of a schema major this code does not read goes to the DLQ with
// the reason, and the partition moves on; known versions and messages without the header are read.
func TestConsumerSchemaVersion(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rig := newItemsRig(t, pool)
	start(t, rig.c)
	items := genItems(0, 5)
	versions := []string{"1", "", "1.3", "2", "garbage"}
	w := rig.kc.NewWriter(itemsTopic)
	defer w.Close()
	w.Balancer = kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return 0 })
	msgs := make([]kafkago.Message, len(items))
	for i, it := range items {
		msgs[i] = kafkago.Message{Value: it.encode()}
		if versions[i] != "" {
			msgs[i].Headers = []kafkago.Header{{Key: "schema-version", Value: []byte(versions[i])}}
		}
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	waitRows(t, pool, 3, 20*time.Second)
	dlq := readDLQ(t, rig.kc, 2)
	for _, m := range dlq {
		reason, _ := kafka.Header(m, ingest.HeaderDLQReason)
		v, _ := kafka.Header(m, "schema-version")
		if !strings.Contains(reason, `unsupported schema-version "`+v+`"`) {
			t.Errorf("version %q: reason %q", v, reason)
		}
	}
}

// TestConsumerContinuesTheProducersTrace: each batch is one span, linked to the spans that produced
// its messages, and what the sinks write runs inside it.
func TestConsumerContinuesTheProducersTrace(t *testing.T) {
	pool := newItemsPool(t)
	kc := startBroker(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))

	// Two producer spans, each writing some items with its trace context in the headers.
	var producers []trace.SpanContext
	for i := range 2 {
		ctx, span := tp.Tracer("test").Start(context.Background(), "produce")
		producers = append(producers, span.SpanContext())
		w := kc.NewWriter("")
		var msgs []kafkago.Message
		for _, it := range genItems(i*10, 10) {
			msgs = append(msgs, kafka.ToKafka(ctx, eventsMessage(it)))
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		w.Close()
		span.End()
	}

	var mu sync.Mutex
	var writeSpans []trace.SpanContext
	table := itemsTable()
	sink := ingest.NewSink(itemsTopic, decodeItem, func(ctx context.Context, tx pgx.Tx, recs []item) error {
		mu.Lock()
		writeSpans = append(writeSpans, trace.SpanContextFromContext(ctx))
		mu.Unlock()
		_, err := table.Insert(ctx, tx, recs)
		return err
	})
	cfg := testConfig()
	cfg.Writers = 1
	cfg.BatchWait = 500 * time.Millisecond
	c, err := ingest.NewConsumer(cfg, ingest.Deps{Pool: pool, Kafka: kc, TracerProvider: tp}, []ingest.Sink{sink})
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, c)
	waitRows(t, pool, 20, 20*time.Second)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}

	linked := map[trace.SpanID]bool{}
	batches := map[trace.SpanID]bool{}
	for _, s := range spans.Ended() {
		if s.Name() != "ingest batch" {
			continue
		}
		batches[s.SpanContext().SpanID()] = true
		for _, l := range s.Links() {
			linked[l.SpanContext.SpanID()] = true
		}
	}
	if len(batches) == 0 {
		t.Fatal("no batch span")
	}
	for _, p := range producers {
		if !linked[p.SpanID()] {
			t.Errorf("no batch span links producer span %s", p.SpanID())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, sc := range writeSpans {
		if !batches[sc.SpanID()] {
			t.Errorf("a sink wrote outside the batch span (span %s)", sc.SpanID())
		}
	}
}

// eventsMessage is it as a message of the items topic, keyed by its transaction.
func eventsMessage(it item) events.Message {
	return events.Message{Topic: itemsTopic, Key: []byte(it.TxSig), Value: it.encode()}
}
