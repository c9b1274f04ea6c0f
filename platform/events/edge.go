package events

// The WebSocket edge's channels, as the edge topics' producers number them. Every message of an edge
// topic belongs to one channel and carries its channel and its number in that channel in two headers:
// the producing service's outbox assigns the number in the transaction that made the message, so that
// every edge replica reads the same number for the same message and a client finds a gap by arithmetic.
const (
	// HeaderEdgeChannel names the channel of an edge message (CandleChannel, MarketsChannel,
	// PricingChannel, NotificationsChannel). A message queued in an outbox with it is numbered.
	HeaderEdgeChannel = "edge-channel"
	// HeaderEdgeSeq is the message's number in its channel, decimal: 1 for the channel's first message,
	// one more for each after it.
	HeaderEdgeSeq = "edge-seq"
)

// The channels of the markets and pricing topics: one each, every market in it.
const (
	MarketsChannel = "markets:summary"
	PricingChannel = "pricing"
)

// CandleChannel is the channel of a market's candles at one resolution.
func CandleChannel(symbol, resolution string) string { return "candle:" + symbol + ":" + resolution }

// NotificationsChannel is the channel of a wallet's notifications.
func NotificationsChannel(authority string) string { return "notifications:" + authority }

// InChannel returns m with its channel header set: queued in an outbox, it is numbered in channel.
func InChannel(m Message, channel string) Message {
	h := make(map[string]string, len(m.Headers)+1)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[HeaderEdgeChannel] = channel
	m.Headers = h
	return m
}
