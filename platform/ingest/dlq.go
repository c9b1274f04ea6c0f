package ingest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
)

// DLQ headers added to a message that could not be decoded, next to its own headers.
const (
	HeaderDLQReason    = "dlq-reason"
	HeaderDLQTopic     = "dlq-topic"
	HeaderDLQPartition = "dlq-partition"
	HeaderDLQOffset    = "dlq-offset"
)

// DLQTopic is where undecodable messages of topic go (events.DLQTopic).
func DLQTopic(topic string) string { return events.DLQTopic(topic) }

// checkSchemaVersion refuses a message whose schema-version header names a major version this code
// does not read (events.SchemaVersion); a message without the header is read as the current version.
func checkSchemaVersion(m kafkago.Message) error {
	v, ok := kafka.Header(m, events.HeaderSchemaVersion)
	if !ok {
		return nil
	}
	major, _, _ := strings.Cut(v, ".")
	if major != events.SchemaVersion {
		return fmt.Errorf("unsupported %s %q: this consumer reads major version %s", events.HeaderSchemaVersion, v, events.SchemaVersion)
	}
	return nil
}

// maxReason keeps a DLQ header well inside any broker's limits.
const maxReason = 2048

func dlqMessage(it *item) kafkago.Message {
	reason := it.err.Error()
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	h := make([]kafkago.Header, 0, len(it.msg.Headers)+4)
	h = append(h, it.msg.Headers...)
	h = append(h,
		kafkago.Header{Key: HeaderDLQReason, Value: []byte(reason)},
		kafkago.Header{Key: HeaderDLQTopic, Value: []byte(it.msg.Topic)},
		kafkago.Header{Key: HeaderDLQPartition, Value: []byte(strconv.Itoa(it.msg.Partition))},
		kafkago.Header{Key: HeaderDLQOffset, Value: []byte(strconv.FormatInt(it.msg.Offset, 10))},
	)
	return kafkago.Message{Topic: DLQTopic(it.msg.Topic), Key: it.msg.Key, Value: it.msg.Value, Headers: h}
}

// produceDLQ sends the messages w.sort queued for the DLQ, and counts and logs each once it is
// there (an attempt that fails later does not send them again).
func (c *Consumer) produceDLQ(ctx context.Context, dlq *kafkago.Writer, w *writeState, items []item) error {
	if len(w.dlq) == 0 {
		return nil
	}
	msgs := slices.Clone(w.dlq) // renamed for the brokers; w.dlq keeps the mesh's names for a retry
	c.kc.Outgoing(msgs)
	if err := dlq.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("produce %d messages to the DLQ: %w", len(w.dlq), err)
	}
	for i := range items {
		it := &items[i]
		if !it.skip && it.err != nil && !it.dlqDone {
			it.dlqDone = true
			c.metrics.dlq.WithLabelValues(it.msg.Topic).Inc()
			c.logger.Warn("message sent to DLQ", "topic", it.msg.Topic, "partition", it.msg.Partition,
				"offset", it.msg.Offset, "reason", it.err.Error())
		}
	}
	return nil
}
