// Package wstest is the WebSocket edge's test kit: the embedded broker with the edge topics, edges
// started on it, clients that check every server message against api/asyncapi.yaml, and producers of
// edge messages in the shapes the producing services publish.
package wstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/api/asyncapitest"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/ws/service"
)

// Broker starts the embedded broker with the edge topics, partitions each, for the test's lifetime.
func Broker(tb testing.TB, partitions int) kafka.Config {
	tb.Helper()
	b, err := kafka.StartEmbedded(context.Background(), kafka.EmbeddedOptions{Partitions: partitions})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, b.Brokers(), partitions, service.Topics()...); err != nil {
		tb.Fatal(err)
	}
	return kafka.Config{Brokers: b.Brokers(), ClientID: "wstest"}
}

// Logger is quiet unless the test runs with -v.
func Logger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return slog.New(slog.DiscardHandler)
}

// Edge is a running replica.
type Edge struct {
	*service.Edge
	URL      string // ws://host/ws
	Internal string // http base URL of /readyz and /metrics
	Registry *prometheus.Registry

	cancel context.CancelFunc
	done   chan error
	srv    *httptest.Server
	once   sync.Once
}

// Start runs an edge on kc until the test ends; wait: until it is ready.
func Start(tb testing.TB, kc kafka.Config, cfg service.Config, wait bool) *Edge {
	tb.Helper()
	reg := telemetry.NewRegistry()
	e := &Edge{Edge: service.New(cfg, service.Deps{Kafka: kc, Logger: Logger(), Registry: reg}), Registry: reg,
		done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { e.done <- e.Run(ctx) }()
	e.srv = httptest.NewServer(e.Handler())
	e.URL = "ws" + strings.TrimPrefix(e.srv.URL, "http") + service.Path
	internal := httptest.NewServer(app.InternalMux(reg, e.Ready))
	e.Internal = internal.URL
	tb.Cleanup(func() {
		e.Stop(tb)
		internal.Close()
	})
	if wait {
		kittest.Eventually(tb, 30*time.Second, "the edge is ready", func() bool { return e.Ready() == nil })
	}
	return e
}

// Stop shuts the edge down as SIGTERM would: every client is closed with 1001, then the listener.
func (e *Edge) Stop(tb testing.TB) {
	tb.Helper()
	e.once.Do(func() {
		e.cancel()
		if err := <-e.done; err != nil {
			tb.Errorf("edge stopped with: %v", err)
		}
		e.srv.Close()
	})
}

// Metric is the value of a counter or gauge of the edge (summed over labels).
func (e *Edge) Metric(tb testing.TB, name string) float64 {
	tb.Helper()
	return kittest.Metric(tb, e.Registry, name, nil)
}

// Msg is a server message, checked against the AsyncAPI document.
type Msg struct {
	Raw         json.RawMessage `json:"-"`
	Type        string          `json:"type"`
	Message     string          `json:"message"`
	ChannelType string          `json:"channelType"`
	Channel     string          `json:"channel"`
	Symbol      string          `json:"symbol"`
	Resolution  string          `json:"resolution"`
	Seq         int64           `json:"seq"`
	Resumed     *bool           `json:"resumed"`
	Data        json.RawMessage `json:"data"`
	Candle      json.RawMessage `json:"candle"`
	Trades      json.RawMessage `json:"trades"`
}

// Conn is a test client. Its first read starts a goroutine that reads every frame into a queue, so
// that waiting for a message with a timeout does not break the connection (a gorilla read that times
// out does).
type Conn struct {
	*websocket.Conn
	tb   testing.TB
	v    *asyncapitest.Validator
	once sync.Once
	msgs chan frameOrErr
}

type frameOrErr struct {
	typ int
	b   []byte
	err error
}

// Dial connects to an edge's /ws.
func Dial(tb testing.TB, url string) *Conn {
	tb.Helper()
	return DialWith(tb, url, websocket.DefaultDialer)
}

// DialWith connects with d.
func DialWith(tb testing.TB, url string, d *websocket.Dialer) *Conn {
	tb.Helper()
	c, resp, err := d.Dial(url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	resp.Body.Close()
	v, err := asyncapitest.New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &Conn{Conn: c, tb: tb, v: v, msgs: make(chan frameOrErr, 1<<14)}
}

// Send writes v as a JSON text frame (a string is sent as is).
func (c *Conn) Send(v any) {
	c.tb.Helper()
	b, ok := v.(string)
	if !ok {
		raw, err := json.Marshal(v)
		if err != nil {
			c.tb.Fatal(err)
		}
		b = string(raw)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(b)); err != nil {
		c.tb.Fatalf("send %s: %v", b, err)
	}
}

// Next reads the next message within 10 s and validates it against the document.
func (c *Conn) Next() Msg {
	c.tb.Helper()
	m, err := c.Read(10 * time.Second)
	if err != nil {
		c.tb.Fatalf("read: %v", err)
	}
	return m
}

func (c *Conn) frame(d time.Duration) (frameOrErr, bool) {
	c.once.Do(func() {
		go func() {
			for {
				typ, b, err := c.ReadMessage()
				c.msgs <- frameOrErr{typ, b, err}
				if err != nil {
					return
				}
			}
		}()
	})
	select {
	case f := <-c.msgs:
		if f.err != nil {
			c.msgs <- f // every later read sees the end too
		}
		return f, true
	case <-time.After(d):
		return frameOrErr{}, false
	}
}

// ErrQuiet is Read's error when nothing arrived in time.
var ErrQuiet = errors.New("no message in time")

// Read reads the next message within d, validating it.
func (c *Conn) Read(d time.Duration) (Msg, error) {
	f, ok := c.frame(d)
	if !ok {
		return Msg{}, ErrQuiet
	}
	if f.err != nil {
		return Msg{}, f.err
	}
	if f.typ != websocket.TextMessage {
		return Msg{}, fmt.Errorf("a frame of type %d, want text", f.typ)
	}
	if err := c.v.Validate(f.b); err != nil {
		c.tb.Errorf("against api/asyncapi.yaml: %v", err)
	}
	var m Msg
	if err := json.Unmarshal(f.b, &m); err != nil {
		return Msg{}, err
	}
	m.Raw = f.b
	return m, nil
}

// Expect reads the next message and fails unless it has type (and, when given, channel).
func (c *Conn) Expect(typ, channel string) Msg {
	c.tb.Helper()
	m := c.Next()
	if m.Type != typ || (channel != "" && m.Channel != channel) {
		c.tb.Fatalf("got %s, want a %s message of channel %q", m.Raw, typ, channel)
	}
	return m
}

// Quiet asserts nothing arrives for d.
func (c *Conn) Quiet(d time.Duration) {
	c.tb.Helper()
	if m, err := c.Read(d); !errors.Is(err, ErrQuiet) {
		c.tb.Fatalf("got %s (%v), want nothing", m.Raw, err)
	}
}

// CloseCode reads until the connection ends and returns the close code (0: closed without one).
func (c *Conn) CloseCode(d time.Duration) (int, string) {
	c.tb.Helper()
	deadline := time.Now().Add(d)
	for {
		f, ok := c.frame(time.Until(deadline))
		if !ok {
			c.tb.Fatalf("still open after %s", d)
		}
		if f.err != nil {
			var ce *websocket.CloseError
			if errors.As(f.err, &ce) {
				return ce.Code, ce.Text
			}
			return 0, f.err.Error()
		}
	}
}

// Producer writes edge messages as the producing services do: key, JSON value, event-type header,
// and the channel and seq headers their outboxes add, numbering each channel's messages 1, 2, 3...
type Producer struct {
	tb testing.TB
	p  kafka.Producer

	mu   sync.Mutex
	seqs map[string]int64 // the last seq given in each channel
}

// NewProducer writes to kc until the test ends.
func NewProducer(tb testing.TB, kc kafka.Config) *Producer {
	w := kc.NewWriter("")
	w.BatchTimeout = time.Millisecond
	tb.Cleanup(func() { w.Close() })
	return &Producer{tb: tb, p: kafka.Producer{W: w}, seqs: map[string]int64{}}
}

// SetSeq makes seq the last seq given in channel: the next message of it gets seq+1. Set back, the
// producer publishes seqs again, as an outbox does after a crash between its write and its delete;
// set ahead, it skips some.
func (p *Producer) SetSeq(channel string, seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seqs[channel] = seq
}

// Seq is the last seq given in channel.
func (p *Producer) Seq(channel string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seqs[channel]
}

// channelOf is the channel of an edge message, as its producer names it; "" for a value that is
// not one of an edge topic (which is then produced without a channel or a seq).
func channelOf(topic string, kv KV) string {
	switch topic {
	case events.TopicEdgeCandles:
		if c, ok := kv.Value.(market.EdgeCandleMessage); ok {
			return events.CandleChannel(c.Symbol, c.Resolution)
		}
	case events.TopicEdgeMarkets:
		return events.MarketsChannel
	case events.TopicEdgePricing:
		return events.PricingChannel
	case events.TopicEdgeNotifications:
		return events.NotificationsChannel(kv.Key)
	}
	return ""
}

// Produce writes values to topic, each with its key.
func (p *Producer) Produce(topic, eventType string, kv ...KV) {
	p.tb.Helper()
	msgs := make([]events.Message, len(kv))
	for i, x := range kv {
		m, err := events.NewMessage(topic, x.Key, eventType, x.Value)
		if err != nil {
			p.tb.Fatal(err)
		}
		if c := channelOf(topic, x); c != "" {
			p.mu.Lock()
			p.seqs[c]++
			m.Headers[events.HeaderEdgeChannel] = c
			m.Headers[events.HeaderEdgeSeq] = strconv.FormatInt(p.seqs[c], 10)
			p.mu.Unlock()
		}
		msgs[i] = m
	}
	if err := p.p.Write(context.Background(), msgs...); err != nil {
		p.tb.Fatal(err)
	}
}

// KV is a message's key and value.
type KV struct {
	Key   string
	Value any
}

// CandleChange is an edge.candles message of the market service: the candle of symbol at res with
// bucket ts, close price closeP and volume, moved by the fills ids (create when first).
func CandleChange(symbol, res string, ts int64, closeP, volume float64, create bool, fillIDs ...string) KV {
	typ := "update"
	if create {
		typ = "create"
	}
	last, lastTs := "", ts
	trades := make([]market.EdgeTrade, 0, len(fillIDs))
	for i, id := range fillIDs {
		trades = append(trades, market.EdgeTrade{
			Ts: ts + int64(i), Slot: 300_000_000 + ts, TxSig: "sig" + id, Action: "fill", ActionExplanation: "orderFilledWithMatch",
			MarketType: "perp", MarketIndex: 0, Symbol: symbol, FillRecordID: id, Taker: Key(1), TakerOrderID: "1",
			TakerOrderDirection: "long", Maker: Key(2), MakerOrderID: "2", MakerOrderDirection: "short",
			BaseAssetAmountFilled: volume, QuoteAssetAmountFilled: volume * closeP, OraclePrice: closeP, TakerFee: 0.01, MakerFee: -0.002,
		})
		last, lastTs = id, ts+int64(i)
	}
	c := market.EdgeCandle{Symbol: symbol, Resolution: res,
		Candle: market.Candle{Ts: ts, FillOpen: closeP - 1, FillHigh: closeP + 1, FillClose: closeP, FillLow: closeP - 2,
			OracleOpen: closeP - 1, OracleHigh: closeP + 1, OracleClose: closeP, OracleLow: closeP - 2,
			QuoteVolume: volume * closeP, BaseVolume: volume},
		LastTradeTs: &lastTs, LastFillRecordID: &last}
	return KV{Key: symbol, Value: market.EdgeCandleMessage{Type: typ, Symbol: symbol, Resolution: res, Candle: c, Trades: trades}}
}

// MarketSummary is an edge.markets message: the spec's market summary fields and more, keyed by the
// channel as the stats service keys it.
func MarketSummary(symbol string, index int, price string) KV {
	return KV{Key: events.MarketsChannel, Value: map[string]any{
		"symbol": symbol, "marketIndex": index, "marketType": "perp", "oraclePrice": price, "price": price, "markPrice": price,
		"quoteVolume": "1200000000", "baseVolume": "8000000000", "openInterest": map[string]string{"long": "10", "short": "-9"},
		"fundingRate": map[string]string{"long": "0.0001", "short": "-0.0001"}, "priceChange24h": "1500000",
		"priceChange24hPercent": "1.02", "priceHigh": map[string]string{"oracle": price, "fill": price},
	}}
}

// Pricing is an edge.pricing message, keyed by the channel.
func Pricing(symbol string, index int, price string, slot int64) KV {
	return KV{Key: events.PricingChannel, Value: map[string]any{
		"symbol": symbol, "marketIndex": index, "marketType": "perp", "oraclePrice": price, "oraclePriceSlot": slot,
		"price": price, "markPrice": price, "markPriceSlot": slot,
	}}
}

// Notification is an edge.notifications message of authority.
func Notification(authority, id, title string) KV {
	return KV{Key: authority, Value: map[string]any{
		"notificationId": id, "authorityId": authority, "title": title, "body": "Your order filled", "type": "RECORD_UPDATE",
		"status": "SENT", "channels": []string{"app"}, "data": map[string]any{"symbol": "SOL-PERP"},
		"actions": []map[string]string{{"label": "View", "link": "/trade/SOL-PERP"}}, "sentAt": 1795100000, "createdAt": 1795100000,
	}}
}

// Key is a deterministic base58 public key (32 bytes) for n.
func Key(n int) string { return kittest.Key(n) }

// Numbered is a snapshot with the seqs of its channels (what routes answer to serve them as
// {"success":true,"data":Data,"seqs":Seqs}).
type Numbered struct {
	Data any
	Seqs map[string]int64
}

// Snapshot serves {"success":true,"data":items} at path, as an owning service's internal port does
// (and "seqs" when the route answers a Numbered); status other than 200 answers that instead.
func Snapshot(tb testing.TB, routes map[string]func() (int, any)) string {
	tb.Helper()
	mux := http.NewServeMux()
	for path, f := range routes {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			status, data := f()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			if status != http.StatusOK {
				_, _ = io.WriteString(w, `{"success":false,"message":"unavailable"}`)
				return
			}
			if n, ok := data.(Numbered); ok {
				_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": n.Data, "seqs": n.Seqs})
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"success": true, "data": data})
		})
	}
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv.URL
}
