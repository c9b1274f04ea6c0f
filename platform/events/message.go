package events

// Message is an encoded record ready for a topic. It does not depend on a Kafka client so that the
// simulator, the outbox and the ingest loop share one shape; platform/kafka converts it to the wire.
type Message struct {
	Topic   string
	Key     []byte
	Value   []byte
	Headers map[string]string
}
