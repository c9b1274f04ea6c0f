// Package kafka wraps segmentio/kafka-go with the settings every tidemark producer and consumer
// shares, carries W3C trace context in message headers, creates topics, and runs an in-process
// broker (kfake) for tests and the dev stack.
package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/tidemark/tidemark/platform/bufconn"
	"github.com/tidemark/tidemark/platform/events"
)

// Config is where and as whom to connect.
type Config struct {
	Brokers  []string
	ClientID string
	// TLS protects every connection when set; SASL authenticates it. Secure builds both from a
	// deployment's Security settings.
	TLS  *tls.Config
	SASL sasl.Mechanism
	// Naming gives the deployment's names of the mesh's topics and groups. Every method of Config
	// takes the mesh's names; messages and assignments come back with the brokers' (Logical).
	Naming
}

// NewWriter returns a synchronous writer for topic ("" = each message names its topic, by the
// brokers' names: Naming.Outgoing renames the mesh's). Keys
// hash to partitions so one key's messages stay ordered; every in-sync replica must acknowledge.
// A writer with a ClientID owns its transport: call CloseIdleConnections on w.Transport after
// Close to drop its connections at once instead of after the idle timeout.
func (c Config) NewWriter(topic string) *kafkago.Writer {
	if topic != "" {
		topic = c.Topic(topic)
	}
	w := &kafkago.Writer{
		Addr:                   kafkago.TCP(c.Brokers...),
		Topic:                  topic,
		Balancer:               &kafkago.Hash{},
		RequiredAcks:           kafkago.RequireAll,
		BatchTimeout:           5 * time.Millisecond,
		BatchSize:              1000,
		AllowAutoTopicCreation: true,
	}
	if c.ClientID != "" || c.TLS != nil || c.SASL != nil {
		w.Transport = c.transport()
	}
	return w
}

// transport is a kafka-go transport for the writers and the admin client, connecting as c says.
func (c Config) transport() *kafkago.Transport {
	return &kafkago.Transport{ClientID: c.ClientID, TLS: c.TLS, SASL: c.SASL}
}

// NewReader returns a consumer-group reader over topics that starts at the oldest offset when the
// group has none and never commits by itself: callers FetchMessage, persist, then CommitMessages.
// For readers that keep their own offsets (ingest keeps them in Postgres), see NewConsumerGroup.
func (c Config) NewReader(group string, topics []string) *kafkago.Reader {
	return kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:     c.Brokers,
		GroupID:     c.Group(group),
		GroupTopics: c.Topics(topics),
		StartOffset: kafkago.FirstOffset,
		MinBytes:    1,
		// Kafka's own default per partition: one writer batch (kafka-go caps those at 1 MB), which
		// brokers return whole even when larger. At 16 MB the embedded broker builds each response by
		// appending a dozen batches into a growing buffer, copying them again at every growth.
		MaxBytes: 1 << 20,
		MaxWait:  250 * time.Millisecond,
		// Enough queued messages for the next batch to be ready while the current one commits.
		QueueCapacity:  4096,
		CommitInterval: 0,
		Dialer:         c.dialer(),
	})
}

// NewConsumerGroup joins group over topics and hands out its generations: the partitions this
// member owns until the next rebalance, read by callers with NewPartitionReader from offsets they
// keep themselves. sessionTimeout is how long the coordinator waits for a silent member before it
// gives the member's partitions to the others (0: 30s); heartbeats go ten times as often. A group
// whose topics gain partitions rebalances to take them in.
func (c Config) NewConsumerGroup(group string, topics []string, sessionTimeout time.Duration) (*kafkago.ConsumerGroup, error) {
	if sessionTimeout <= 0 {
		sessionTimeout = 30 * time.Second
	}
	cg, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:                    c.Group(group),
		Brokers:               c.Brokers,
		Dialer:                c.dialer(),
		Topics:                c.Topics(topics),
		StartOffset:           kafkago.FirstOffset,
		SessionTimeout:        sessionTimeout,
		HeartbeatInterval:     sessionTimeout / 10,
		RebalanceTimeout:      sessionTimeout,
		WatchPartitionChanges: true,
		JoinGroupBackoff:      time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("kafka: consumer group %s: %w", group, err)
	}
	return cg, nil
}

// NewPartitionReader returns a reader of one partition of topic without a group, positioned by the
// caller with SetOffset: for consumers that must know where they start (every replica of the
// WebSocket edge reads every partition from the end offsets it looked up; ingest from the offsets
// stored in Postgres) and commit nothing. queue is how many fetched messages it holds ahead of its
// caller (0: 1024).
func (c Config) NewPartitionReader(topic string, partition, queue int) *kafkago.Reader {
	if queue <= 0 {
		queue = 1024
	}
	return kafkago.NewReader(kafkago.ReaderConfig{
		Brokers:   c.Brokers,
		Topic:     c.Topic(topic),
		Partition: partition,
		MinBytes:  1,
		MaxBytes:  1 << 20,
		// A live feed: an empty fetch returns soon so that the next message waits on a fresh one.
		MaxWait:       100 * time.Millisecond,
		QueueCapacity: queue,
		Dialer:        c.dialer(),
	})
}

func (c Config) dialer() *kafkago.Dialer {
	return &kafkago.Dialer{
		ClientID:      c.ClientID,
		TLS:           c.TLS,
		SASLMechanism: c.SASL,
		Timeout:       10 * time.Second,
		// Fetch responses are megabytes, and kafka-go reads them through a 4 KB buffer: without a
		// buffer of our own that is a read system call every few fills.
		DialFunc: bufconn.Dialer(nil),
	}
}

// EndOffsets returns, for every partition of each topic (the mesh's names, and so are the map's
// keys), the offset the next message written to it will have. A topic that does not exist is an error.
func (c Config) EndOffsets(ctx context.Context, topics ...string) (map[string]map[int]int64, error) {
	client := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 10 * time.Second, Transport: c.transport()}
	meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: c.Topics(topics)})
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata of %v: %w", topics, err)
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("kafka: topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			req.Topics[t.Name] = append(req.Topics[t.Name], kafkago.LastOffsetOf(p.ID))
		}
	}
	for _, t := range c.Topics(topics) {
		if len(req.Topics[t]) == 0 {
			return nil, fmt.Errorf("kafka: topic %s has no partitions", t)
		}
	}
	resp, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("kafka: end offsets of %v: %w", topics, err)
	}
	out := make(map[string]map[int]int64, len(topics))
	for physical, parts := range resp.Topics {
		t := c.Logical(physical)
		out[t] = make(map[int]int64, len(parts))
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("kafka: end offset of %s/%d: %w", t, p.Partition, p.Error)
			}
			out[t][p.Partition] = p.LastOffset
		}
	}
	return out, nil
}

// ToKafka converts m and adds the trace context of ctx to its headers.
func ToKafka(ctx context.Context, m events.Message) kafkago.Message {
	km := kafkago.Message{Topic: m.Topic, Key: m.Key, Value: m.Value}
	if len(m.Headers) > 0 {
		km.Headers = make([]kafkago.Header, 0, len(m.Headers)+2)
		// Sorted keys: the same message always has the same bytes.
		for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
			km.Headers = append(km.Headers, kafkago.Header{Key: k, Value: []byte(m.Headers[k])})
		}
	}
	propagator().Inject(ctx, headerCarrier{&km.Headers})
	return km
}

// TraceContext returns ctx carrying the remote span context found in m's headers, if any.
func TraceContext(ctx context.Context, m kafkago.Message) context.Context {
	return propagator().Extract(ctx, headerCarrier{&m.Headers})
}

// Header returns the value of the first header named key.
func Header(m kafkago.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// propagator is otel's global one (telemetry installs W3C trace context there) or, while
// nothing is installed, W3C trace context itself, so traces cross Kafka in every setup.
func propagator() propagation.TextMapPropagator {
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		return p
	}
	return propagation.TraceContext{}
}

type headerCarrier struct{ h *[]kafkago.Header }

func (c headerCarrier) Get(key string) string {
	for _, h := range *c.h {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c headerCarrier) Set(key, value string) {
	for i, h := range *c.h {
		if h.Key == key {
			(*c.h)[i].Value = []byte(value)
			return
		}
	}
	*c.h = append(*c.h, kafkago.Header{Key: key, Value: []byte(value)})
}

func (c headerCarrier) Keys() []string {
	keys := make([]string, len(*c.h))
	for i, h := range *c.h {
		keys[i] = h.Key
	}
	return keys
}

// EnsureTopics creates the topics that do not exist yet, with partitions partitions and a
// replication factor of min(3, number of brokers), for the dev stack and tests; a deployment
// declares its topics with EnsureTopicSpecs. Existing topics are left as they are.
func EnsureTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	if partitions <= 0 {
		return fmt.Errorf("kafka: ensure topics: partitions must be positive, got %d", partitions)
	}
	specs := make([]TopicSpec, len(topics))
	for i, t := range topics {
		specs[i] = TopicSpec{Name: t, Partitions: partitions}
	}
	_, err := Config{Brokers: brokers}.EnsureTopicSpecs(ctx, specs, false)
	return err
}

// Producer writes events.Messages through a kafka-go writer, with the trace context of ctx in their
// headers. It is what producers of protocol events (the simulator, tests) hand to code that only
// knows events.Message.
type Producer struct {
	W *kafkago.Writer
	// Naming renames the messages' topics for the brokers (zero: as they are).
	Naming Naming
}

// Write delivers msgs, returning once the writer has them acknowledged.
func (p Producer) Write(ctx context.Context, msgs ...events.Message) error {
	km := make([]kafkago.Message, len(msgs))
	for i, m := range msgs {
		km[i] = ToKafka(ctx, m)
	}
	p.Naming.Outgoing(km)
	if err := p.W.WriteMessages(ctx, km...); err != nil {
		return fmt.Errorf("kafka: write %d messages: %w", len(msgs), err)
	}
	return nil
}
