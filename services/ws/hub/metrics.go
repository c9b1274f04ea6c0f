package hub

import (
	"slices"
	"strconv"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/ws"
)

type metrics struct {
	connections   prometheus.Gauge
	subscriptions *prometheus.GaugeVec
	sent          prometheus.Counter
	bytes         prometheus.Counter
	overflows     prometheus.Counter
	disconnects   *prometheus.CounterVec
	latency       prometheus.Histogram
	edge          *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	repeats       *prometheus.CounterVec
	gaps          *prometheus.CounterVec
	errors        prometheus.Counter
	resumes       *prometheus.CounterVec
	slow          prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connections: telemetry.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ws_connections", Help: "Open WebSocket connections."})),
		subscriptions: telemetry.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ws_subscriptions", Help: "Subscriptions of the open connections, by channel type."}, []string{"channel_type"})),
		sent: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ws_messages_sent_total", Help: "Messages written to clients: changes, snapshots, acknowledgements and errors."})),
		bytes: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ws_sent_bytes_total", Help: "Bytes of the WebSocket frames written to clients."})),
		overflows: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ws_queue_overflows_total", Help: "Clients disconnected because their queue overflowed (they read too slowly)."})),
		disconnects: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_disconnects_total",
			Help: "Connections ended, by close code: the code of the close handshake (the edge's, or the client's it answered), 1006 when the connection ended without one, other for codes outside the standard ones."},
			[]string{"code"})),
		latency: telemetry.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ws_fanout_latency_seconds",
			Help:    "From an edge message's topic timestamp to its frame written to a client's socket.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		})),
		edge: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_edge_messages_total", Help: "Edge topic messages applied."}, []string{"topic"})),
		rejected: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_edge_rejected_total", Help: "Edge topic messages that could not be decoded, skipped."}, []string{"topic"})),
		repeats: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_edge_repeats_total", Help: "Edge topic messages dropped because their channel already had their seq (an outbox republished them, or a snapshot included them)."}, []string{"topic"})),
		gaps: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_edge_gaps_total", Help: "Edge topic messages whose seq skipped numbers of their channel: messages this replica never got."}, []string{"topic"})),
		errors: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ws_request_errors_total", Help: "Client messages answered with an error."})),
		resumes: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ws_resumes_total", Help: "Subscriptions with since: replayed, or answered with an init (too old)."}, []string{"result"})),
		slow: telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ws_slow_writes_total", Help: "Writes that found a client's socket full: the client got a writer of its own until its queue drained."})),
	}
	for _, t := range ws.ChannelTypes() {
		m.subscriptions.WithLabelValues(string(t))
	}
	for _, code := range closeCodes {
		m.disconnects.WithLabelValues(strconv.Itoa(code))
	}
	m.disconnects.WithLabelValues("other")
	return m
}

// closeCodes are the close codes counted by their number: the standard ones a connection can end
// with. A client may close with any code it likes; the rest share one label, so that clients cannot
// grow the edge's series.
var closeCodes = []int{
	websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseProtocolError,
	websocket.CloseUnsupportedData, websocket.CloseAbnormalClosure, websocket.CloseInvalidFramePayloadData,
	websocket.ClosePolicyViolation, websocket.CloseMessageTooBig, websocket.CloseInternalServerErr,
}

// disconnected counts a connection's end with code (0: without a close handshake).
func (m *metrics) disconnected(code int) {
	if code == 0 {
		code = websocket.CloseAbnormalClosure
	}
	label := "other"
	if slices.Contains(closeCodes, code) {
		label = strconv.Itoa(code)
	}
	m.disconnects.WithLabelValues(label).Inc()
}
