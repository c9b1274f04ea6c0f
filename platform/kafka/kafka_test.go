package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/trace"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
)

func startBroker(tb testing.TB, opts kafka.EmbeddedOptions) *kafka.Embedded {
	tb.Helper()
	e, err := kafka.StartEmbedded(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

func TestTraceContextRoundTrip(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)

	km := kafka.ToKafka(ctx, events.Message{
		Topic: "protocol.fills", Key: []byte("0"), Value: []byte(`{}`),
		Headers: map[string]string{"event-type": "fill", "schema-version": "1"},
	})
	if got, _ := kafka.Header(km, "traceparent"); got != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent = %q", got)
	}
	for k, want := range map[string]string{"event-type": "fill", "schema-version": "1"} {
		if got, ok := kafka.Header(km, k); !ok || got != want {
			t.Errorf("%s = %q, %v", k, got, ok)
		}
	}
	if _, ok := kafka.Header(km, "missing"); ok {
		t.Error("missing header found")
	}
	got := trace.SpanContextFromContext(kafka.TraceContext(context.Background(), km))
	if got.TraceID() != tid || got.SpanID() != sid || !got.IsRemote() || !got.IsSampled() {
		t.Errorf("extracted %+v", got)
	}

	// Without a span nothing is added and nothing is extracted.
	plain := kafka.ToKafka(context.Background(), events.Message{Topic: "t", Value: []byte("x")})
	if len(plain.Headers) != 0 {
		t.Errorf("headers = %v", plain.Headers)
	}
	if trace.SpanContextFromContext(kafka.TraceContext(context.Background(), plain)).IsValid() {
		t.Error("span context from nothing")
	}
}

func TestEmbeddedGroupRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := startBroker(t, kafka.EmbeddedOptions{Partitions: 3, Topics: []string{"a"}})
	if err := kafka.EnsureTopics(ctx, e.Brokers(), 2, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := kafka.EnsureTopics(ctx, e.Brokers(), 2, "a", "b"); err != nil {
		t.Fatalf("second EnsureTopics: %v", err)
	}
	assertPartitions(t, e.Brokers(), "a", 3) // existing topics are left alone
	assertPartitions(t, e.Brokers(), "b", 2)

	kc := kafka.Config{Brokers: e.Brokers(), ClientID: "test"}
	w := kc.NewWriter("")
	defer w.Close()
	var msgs []kafkago.Message
	for i := range 20 {
		topic := []string{"a", "b", "c.auto"}[i%3]
		msgs = append(msgs, kafka.ToKafka(ctx, events.Message{
			Topic: topic, Key: fmt.Appendf(nil, "k%d", i%4), Value: fmt.Appendf(nil, "%d", i),
			Headers: map[string]string{"n": fmt.Sprint(i)},
		}))
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}

	r := kc.NewReader("g", []string{"a", "b", "c.auto"})
	defer r.Close()
	lastByKey := map[string]int{}
	for range 20 {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		fmt.Sscan(string(m.Value), &n)
		if h, _ := kafka.Header(m, "n"); h != string(m.Value) {
			t.Errorf("header n = %q for value %s", h, m.Value)
		}
		k := m.Topic + "/" + string(m.Key)
		if prev, ok := lastByKey[k]; ok && prev > n {
			t.Errorf("%s: %d after %d", k, n, prev)
		}
		lastByKey[k] = n
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
}

// A closed broker must not keep its records alive through the Embedded that a test's cleanup list
// (or a benchmark's) still holds.
func TestEmbeddedCloseDropsData(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := startBroker(t, kafka.EmbeddedOptions{Partitions: 1, Topics: []string{"a"}})
	w := kafka.Config{Brokers: e.Brokers(), ClientID: "test"}.NewWriter("a")
	const n, size = 2000, 16 << 10
	msgs := make([]kafkago.Message, n)
	for i := range msgs {
		msgs[i] = kafkago.Message{Value: bytes.Repeat([]byte{byte(i)}, size)}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Transport.(*kafkago.Transport).CloseIdleConnections()
	msgs = nil
	held := heapAlloc()
	e.Close()
	e.Close() // a second Close, as the cleanup will do, is harmless
	// The broker's goroutines end shortly after Close.
	var freed int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if freed = int64(held) - int64(heapAlloc()); freed >= n*size*8/10 {
			break
		}
	}
	if freed < n*size*8/10 {
		t.Fatalf("closing the broker freed %d bytes; it held %d bytes of records", freed, n*size)
	}
	if len(e.Brokers()) == 0 {
		t.Fatal("a closed broker forgot its addresses")
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func assertPartitions(tb testing.TB, brokers []string, topic string, want int) {
	tb.Helper()
	conn, err := kafkago.Dial("tcp", brokers[0])
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		tb.Fatal(err)
	}
	if len(parts) != want {
		tb.Errorf("%s has %d partitions, want %d", topic, len(parts), want)
	}
}

// TestPartitionReaderFromEndOffsets: a reader positioned at the end offsets looked up before a write
// gets exactly what was written after, partition by partition; a missing topic is an error.
func TestPartitionReaderFromEndOffsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := startBroker(t, kafka.EmbeddedOptions{Partitions: 2, Topics: []string{"edge"}})
	kc := kafka.Config{Brokers: e.Brokers(), ClientID: "test"}
	w := kc.NewWriter("edge")
	defer w.Close()
	write := func(from, to int) {
		t.Helper()
		var msgs []kafkago.Message
		for i := from; i < to; i++ {
			msgs = append(msgs, kafkago.Message{Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "%d", i)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 10)
	ends, err := kc.EndOffsets(ctx, "edge")
	if err != nil {
		t.Fatal(err)
	}
	if len(ends["edge"]) != 2 || ends["edge"][0]+ends["edge"][1] != 10 {
		t.Fatalf("end offsets = %v, want 2 partitions holding 10 messages", ends)
	}
	write(10, 20)
	seen := 0
	for p, end := range ends["edge"] {
		after, err := kc.EndOffsets(ctx, "edge")
		if err != nil {
			t.Fatal(err)
		}
		r := kc.NewPartitionReader("edge", p, 0)
		if err := r.SetOffset(end); err != nil {
			t.Fatal(err)
		}
		for off := end; off < after["edge"][p]; off++ {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			fmt.Sscan(string(m.Value), &n)
			if m.Offset != off || n < 10 {
				t.Errorf("partition %d: offset %d value %d, want offset %d and a value of the second write", p, m.Offset, n, off)
			}
			seen++
		}
		r.Close()
	}
	if seen != 10 {
		t.Errorf("read %d messages after the end offsets, want 10", seen)
	}
	if _, err := kc.EndOffsets(ctx, "edge", "no.such.topic"); err == nil {
		t.Error("EndOffsets of a missing topic: no error")
	}
}

// TestEmbeddedTrim: a long-lived broker keeps of a consumed topic only what its slowest group has
// not moved past (and KeepBehind more), of a tail topic only its newest TailKeep records, and of a
// topic one of whose groups has not committed yet, or that nothing names, everything; what it lets
// go of is freed.
func TestEmbeddedTrim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	trim := kafka.Trim{
		Consumers:  map[string][]string{"consumed": {"fast", "slow"}, "waiting": {"fast", "absent"}},
		KeepBehind: 100, Every: time.Hour, // TrimOnce below, not the ticker
		Tails: []string{"tail"}, TailKeep: 300,
	}
	const trimSegment = 1 << 20
	e := startBroker(t, kafka.EmbeddedOptions{Partitions: 1, Topics: []string{"consumed", "waiting", "edge", "tail"}, SegmentBytes: trimSegment})
	e.TrimEvery(trim)
	kc := kafka.Config{Brokers: e.Brokers(), ClientID: "test"}
	const n, size = 2000, 8 << 10 // 16 MiB a topic: several segments
	w := kc.NewWriter("")
	defer w.Close()
	for _, topic := range []string{"consumed", "waiting", "edge", "tail"} {
		msgs := make([]kafkago.Message, n)
		for i := range msgs {
			msgs[i] = kafkago.Message{Topic: topic, Value: bytes.Repeat([]byte{byte(i)}, size)}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(group, topic string, upTo int) {
		r := kc.NewReader(group, []string{topic})
		defer r.Close()
		for range upTo {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	consume("fast", "consumed", n)
	consume("slow", "consumed", 1200)
	consume("fast", "waiting", n)

	held := e.Bytes("consumed")
	if deleted := e.TrimOnce(trim); deleted != 1200-100+n-300 {
		t.Errorf("trimmed %d records, want %d", deleted, 1200-100+n-300)
	}
	for topic, want := range map[string]int64{"consumed": 1200 - 100, "waiting": 0, "edge": 0, "tail": n - 300} {
		if got := firstOffset(t, e.Brokers(), topic); got != want {
			t.Errorf("%s starts at %d, want %d", topic, got, want)
		}
	}
	// Whole segments go: of the 1100 records trimmed, all but what shares a segment with kept ones.
	if freed, minFreed := held-e.Bytes("consumed"), int64(1100*size-2*trimSegment); freed < minFreed {
		t.Errorf("trimming freed %d bytes of the topic's %d, want at least %d", freed, held, minFreed)
	}
	if got, want := e.Bytes("waiting"), held; got < want {
		t.Errorf("the topic a group has not read holds %d bytes, want all %d", got, want)
	}
	// A consumer of the trimmed topic still reads every record it has not committed.
	consume("slow", "consumed", n-1200)
}

// firstOffset is the first offset partition 0 of topic still holds.
func firstOffset(tb testing.TB, brokers []string, topic string) int64 {
	tb.Helper()
	conn, err := kafkago.DialLeader(context.Background(), "tcp", brokers[0], topic, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	first, err := conn.ReadFirstOffset()
	if err != nil {
		tb.Fatal(err)
	}
	return first
}
