// Package hub serves the WebSocket edge's channels: it keeps what each channel's init needs, fans
// each edge message out to the channel's subscribers (encoded and framed once, shared by every
// queue), keeps a short replay buffer per channel for clients that resume, and runs each client's
// connection: a bounded queue and one writer, pings, and the caps on what a client may send.
package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/ws"
)

// Config bounds what the hub keeps and what a client may do; zero values take the defaults.
type Config struct {
	// QueueSize is the most frames a client's queue holds; a client that falls that far behind is
	// disconnected with 1008.
	QueueSize int
	// MaxSubscriptions per connection.
	MaxSubscriptions int
	// MaxMessageBytes is the largest client message answered; a larger one is answered with an
	// error and skipped, and one over MaxFrameBytes closes the connection with 1009.
	MaxMessageBytes int
	// MessageRate and MessageBurst bound a client's messages per second; those over are answered
	// with an error and dropped.
	MessageRate  float64
	MessageBurst int
	// PingInterval between pings; a client that sends nothing (a pong included) for PingInterval +
	// PongTimeout is closed.
	PingInterval time.Duration
	PongTimeout  time.Duration
	// WriteTimeout bounds one write to a client's socket.
	WriteTimeout time.Duration
	// SocketBuffer is each connection's kernel send buffer: what a stalled client holds beyond its
	// queue. Bounded, ten thousand connections cannot pin gigabytes of kernel memory, and a client
	// that stops reading is found out after its queue, not after megabytes. Negative: the OS's.
	SocketBuffer int
	// ReplayWindow is how long a channel's messages are kept for clients that resume; ReplayMax
	// caps how many per channel.
	ReplayWindow time.Duration
	ReplayMax    int
	// Clock is the hub's time: the age of replayed messages and the refill of each client's message
	// rate. nil means time.Now; tests move it instead of waiting. Socket deadlines and pings keep
	// the wall clock, which is what the network runs on.
	Clock func() time.Time
}

// Defaults of Config.
const (
	DefaultQueueSize        = 1024
	DefaultMaxSubscriptions = 100
	DefaultMaxMessageBytes  = 4096
	MaxFrameBytes           = 1 << 20
	DefaultMessageRate      = 20
	DefaultMessageBurst     = 50
	DefaultPingInterval     = 25 * time.Second
	DefaultPongTimeout      = 10 * time.Second
	DefaultWriteTimeout     = 10 * time.Second
	DefaultSocketBuffer     = 128 << 10
	DefaultReplayWindow     = 2 * time.Minute
	DefaultReplayMax        = 10000
)

func (c *Config) defaults() {
	c.QueueSize = cmp.Or(c.QueueSize, DefaultQueueSize)
	c.MaxSubscriptions = cmp.Or(c.MaxSubscriptions, DefaultMaxSubscriptions)
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, DefaultMaxMessageBytes)
	c.MessageRate = cmp.Or(c.MessageRate, DefaultMessageRate)
	c.MessageBurst = cmp.Or(c.MessageBurst, DefaultMessageBurst)
	c.PingInterval = cmp.Or(c.PingInterval, DefaultPingInterval)
	c.PongTimeout = cmp.Or(c.PongTimeout, DefaultPongTimeout)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultWriteTimeout)
	c.SocketBuffer = cmp.Or(c.SocketBuffer, DefaultSocketBuffer)
	c.ReplayWindow = cmp.Or(c.ReplayWindow, DefaultReplayWindow)
	c.ReplayMax = cmp.Or(c.ReplayMax, DefaultReplayMax)
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Hub is the edge's channels and clients.
type Hub struct {
	cfg    Config
	logger *slog.Logger
	m      *metrics
	now    func() time.Time

	mu       sync.RWMutex
	channels map[string]*channel
	symbols  map[string]struct{}

	// fetch takes the snapshot of one market's candles from the owning service (SetFetch); nil:
	// there is nothing to fetch from. fetching holds the fetches under way, by symbol, so that the
	// subscriptions arriving meanwhile wait for the same one.
	fetch    func(ctx context.Context, symbol string) error
	fetchMu  sync.Mutex
	fetching map[string]chan struct{}

	// notifySeq reads a wallet's notifications channel seq from the notify service
	// (SetNotificationsSeq); nil: there is nothing to ask, and a channel the replica has had no
	// message of is acknowledged at 0. seqCalls holds the reads under way, by wallet, so that the
	// subscriptions arriving meanwhile share one.
	notifySeq func(ctx context.Context, authority string) (int64, error)
	seqMu     sync.Mutex
	seqCalls  map[string]*seqCall

	// warmed is closed once the edge topics are being read and the snapshots taken: subscriptions
	// wait for it, so that no init is served from a cold state.
	warmed     chan struct{}
	warmedOnce sync.Once

	shards    []*shard
	shardNext atomic.Uint32

	clientsMu sync.Mutex
	clients   map[*Client]struct{}
	closing   bool
	clientsWG sync.WaitGroup
}

// New makes a hub; its metrics register with reg.
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) *Hub {
	cfg.defaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := &Hub{
		cfg: cfg, logger: logger, m: newMetrics(reg), now: cfg.Clock,
		channels: map[string]*channel{}, symbols: map[string]struct{}{}, fetching: map[string]chan struct{}{},
		seqCalls: map[string]*seqCall{}, clients: map[*Client]struct{}{}, warmed: make(chan struct{}),
	}
	// A worker per core, and one more: writes are system calls, and one may wait on a socket for up
	// to fastWrite.
	for range runtime.GOMAXPROCS(0) + 1 {
		h.shards = append(h.shards, &shard{wake: make(chan struct{}, 1)})
	}
	return h
}

func (h *Hub) nextShard() *shard {
	return h.shards[int(h.shardNext.Add(1))%len(h.shards)]
}

// Run runs the shards' writers and the pings until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range h.shards {
		wg.Go(func() { s.run(stop) })
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	return app.Every(ctx, time.Second, func(context.Context) {
		now := time.Now()
		h.clientsMu.Lock()
		clients := make([]*Client, 0, len(h.clients))
		for c := range h.clients {
			clients = append(clients, c)
		}
		h.clientsMu.Unlock()
		for _, c := range clients {
			c.dueForPing(now)
		}
	})
}

// SetWarmed marks the hub ready to serve inits: Start was called and the snapshots were taken.
func (h *Hub) SetWarmed() { h.warmedOnce.Do(func() { close(h.warmed) }) }

// Warmed reports whether SetWarmed was called.
func (h *Hub) Warmed() bool {
	select {
	case <-h.warmed:
		return true
	default:
		return false
	}
}

// Config is the hub's configuration with its defaults filled in.
func (h *Hub) Config() Config { return h.cfg }

// topicOf is the edge topic that feeds a channel type.
func topicOf(t ws.ChannelType) string {
	switch t {
	case ws.Candle:
		return events.TopicEdgeCandles
	case ws.Markets:
		return events.TopicEdgeMarkets
	case ws.Pricing:
		return events.TopicEdgePricing
	case ws.Notifications:
		return events.TopicEdgeNotifications
	}
	return ""
}

// Topics are the edge topics the hub is fed from.
func Topics() []string {
	return []string{events.TopicEdgeCandles, events.TopicEdgeMarkets, events.TopicEdgePricing, events.TopicEdgeNotifications}
}

// Start makes the channels that exist from the start: markets and pricing take every message of
// their topic. It is called once the edge topics are being read.
func (h *Hub) Start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range []ws.ChannelType{ws.Markets, ws.Pricing} {
		h.channelLocked(ws.Channel{Type: t})
	}
}

// SetFetch sets how the hub takes one market's candle snapshot from the owning service, when a
// subscription names a market or a candle channel it has nothing of. It must be called before
// clients connect.
func (h *Hub) SetFetch(fetch func(ctx context.Context, symbol string) error) { h.fetch = fetch }

// fetchWait bounds how long a subscription waits for a market's snapshot; after it, the init is sent
// with what the replica has.
const fetchWait = 5 * time.Second

// lacks reports whether a candle subscription would find nothing to send: the market is unknown, or
// its channel has no candle and no seq yet.
func (h *Hub) lacks(id ws.Channel) bool {
	if h.fetch == nil {
		return false
	}
	if !h.KnownSymbol(id.Symbol) {
		return true
	}
	ch := h.lock(id, false)
	if ch == nil {
		return true
	}
	defer ch.lk.Unlock()
	return ch.candle == nil || !ch.known
}

// fetchCandles takes symbol's candle snapshot, or waits for the fetch under way.
func (h *Hub) fetchCandles(symbol string) {
	h.fetchMu.Lock()
	done, busy := h.fetching[symbol]
	if !busy {
		done = make(chan struct{})
		h.fetching[symbol] = done
	}
	h.fetchMu.Unlock()
	if busy {
		select {
		case <-done:
		case <-time.After(fetchWait):
		}
		return
	}
	defer func() {
		h.fetchMu.Lock()
		delete(h.fetching, symbol)
		h.fetchMu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), fetchWait)
	defer cancel()
	if err := h.fetch(ctx, symbol); err != nil {
		h.logger.Warn("candle snapshot of one market failed", "symbol", symbol, "err", err)
	}
}

// SetNotificationsSeq sets how the hub reads a wallet's notifications channel seq from the notify
// service, when a subscription names a wallet the replica has had no message of since it started.
// It must be called before clients connect.
func (h *Hub) SetNotificationsSeq(seq func(ctx context.Context, authority string) (int64, error)) {
	h.notifySeq = seq
}

// seqCall is one read of a wallet's channel seq, shared by the subscriptions that wait for it.
type seqCall struct {
	done chan struct{}
	seq  int64
	err  error
}

// unnumbered reports whether a notifications subscription would be acknowledged with a seq the
// replica made up: it has had no message of the wallet, so its channel says 0 whatever the wallet's
// count is.
func (h *Hub) unnumbered(id ws.Channel) bool {
	if h.notifySeq == nil {
		return false
	}
	ch := h.lock(id, false)
	if ch == nil {
		return true
	}
	defer ch.lk.Unlock()
	return !ch.known
}

// notificationsSeq reads authority's channel seq, or waits for the read under way; ok is false when
// it failed or took longer than fetchWait (the subscription is then acknowledged with what the
// replica has, as before there was a notify service to ask).
func (h *Hub) notificationsSeq(authority string) (seq int64, ok bool) {
	h.seqMu.Lock()
	call, busy := h.seqCalls[authority]
	if !busy {
		call = &seqCall{done: make(chan struct{})}
		h.seqCalls[authority] = call
	}
	h.seqMu.Unlock()
	if !busy {
		func() {
			defer func() {
				h.seqMu.Lock()
				delete(h.seqCalls, authority)
				h.seqMu.Unlock()
				close(call.done)
			}()
			ctx, cancel := context.WithTimeout(context.Background(), fetchWait)
			defer cancel()
			call.seq, call.err = h.notifySeq(ctx, authority)
			if call.err != nil {
				h.logger.Warn("notifications seq of one wallet failed", "authority", authority, "err", call.err)
			}
		}()
	}
	select {
	case <-call.done:
		return call.seq, call.err == nil
	case <-time.After(fetchWait):
		return 0, false
	}
}

// channelLocked returns the channel, creating it; h.mu must be held for writing.
func (h *Hub) channelLocked(id ws.Channel) *channel {
	name := id.Name()
	if ch, ok := h.channels[name]; ok {
		return ch
	}
	ch := &channel{id: id, name: name, topic: topicOf(id.Type), prefix: ws.Prefix(id)}
	h.channels[name] = ch
	return ch
}

// lookup returns the channel, creating it when create.
func (h *Hub) lookup(id ws.Channel, create bool) *channel {
	h.mu.RLock()
	ch := h.channels[id.Name()]
	h.mu.RUnlock()
	if ch != nil || !create {
		return ch
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.channelLocked(id)
}

// lock returns the channel locked, never one the janitor removed meanwhile.
func (h *Hub) lock(id ws.Channel, create bool) *channel {
	for {
		ch := h.lookup(id, create)
		if ch == nil {
			return nil
		}
		ch.lk.Lock()
		if !ch.dead {
			return ch
		}
		ch.lk.Unlock()
	}
}

// KnownSymbol reports whether a market has been seen in a snapshot or an edge message.
func (h *Hub) KnownSymbol(s string) bool {
	h.mu.RLock()
	_, ok := h.symbols[s]
	h.mu.RUnlock()
	return ok
}

func (h *Hub) learn(symbol string) {
	h.mu.RLock()
	_, ok := h.symbols[symbol]
	h.mu.RUnlock()
	if !ok {
		h.mu.Lock()
		h.symbols[symbol] = struct{}{}
		h.mu.Unlock()
	}
}

// Message is one edge topic message.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Time      time.Time // the topic timestamp
	Key       []byte
	Value     []byte
	// Channel and Seq are the message's channel and its number there, as the producer's outbox
	// gave them (the edge-channel and edge-seq headers).
	Channel string
	Seq     int64
}

// ErrRejected wraps the reason an edge message was skipped.
var ErrRejected = errors.New("edge message rejected")

func rejected(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRejected, fmt.Sprintf(format, a...))
}

// edgeCandle is an edge.candles value as the ws reads it: the candle and trades pass through as sent.
type edgeCandle struct {
	Type       string          `json:"type"`
	Symbol     string          `json:"symbol"`
	Resolution string          `json:"resolution"`
	Candle     json.RawMessage `json:"candle"`
	Trades     json.RawMessage `json:"trades"`
}

type candleTs struct {
	Ts *int64 `json:"ts"`
}

type keyed struct {
	Symbol      string `json:"symbol"`
	AuthorityID string `json:"authorityId"`
}

// Apply fans one edge message out to its channel's subscribers and keeps it for replay. Messages of
// one partition must be applied in offset order, from one goroutine; partitions may run in parallel.
// A message that cannot be decoded, or carries no seq, is counted, skipped and reported (wrapping
// ErrRejected).
//
// Every message of a channel comes from one partition (the producers key them so), in the order of
// their seqs: a seq the channel is at or past is a repeat (the producer's outbox published it again
// after a crash, or the snapshot the channel was warmed from includes it) and is dropped; one that
// skips numbers means the replica never got those messages, and the channel goes on from it.
func (h *Hub) Apply(m Message) error {
	id, build, err := h.decode(m)
	if err == nil && m.Seq <= 0 {
		err = rejected("%s: no %s header", m.Topic, events.HeaderEdgeSeq)
	}
	if err == nil && m.Channel != "" && m.Channel != id.Name() {
		err = rejected("%s: header names channel %s, the message is of %s", m.Topic, m.Channel, id.Name())
	}
	if err != nil {
		h.m.rejected.WithLabelValues(m.Topic).Inc()
		return err
	}
	ch := h.lock(id, true)
	defer ch.lk.Unlock()
	switch {
	case ch.known && m.Seq <= ch.seq:
		h.m.repeats.WithLabelValues(m.Topic).Inc()
		return nil
	case ch.known && m.Seq > ch.seq+1:
		h.m.gaps.WithLabelValues(m.Topic).Inc()
		h.logger.Warn("edge channel skips seqs", "channel", ch.name, "after", ch.seq, "seq", m.Seq)
		ch.restart(m.Seq - 1)
	case !ch.known:
		ch.known = true
		ch.restart(m.Seq - 1)
	}
	h.m.edge.WithLabelValues(m.Topic).Inc()
	ch.seq = m.Seq
	payload := build(ch)
	f := &frame{data: appendFrame(make([]byte, 0, len(payload)+10), opText, payload), ch: ch, at: m.Time,
		seq: m.Seq, received: h.now()}
	ch.replay = append(ch.replay, f)
	if len(ch.replay) > h.cfg.ReplayMax {
		ch.evict(time.Time{}, h.cfg.ReplayMax)
	}
	for _, s := range ch.subs {
		if m.Seq <= s.skip {
			continue
		}
		s.c.enqueue(f)
	}
	return nil
}

// decode reads m into its channel and a function making its message once the channel is locked
// (the message carries the channel's seq, and a candle change updates the channel's state).
func (h *Hub) decode(m Message) (ws.Channel, func(*channel) []byte, error) {
	switch m.Topic {
	case events.TopicEdgeCandles:
		var c edgeCandle
		if err := json.Unmarshal(m.Value, &c); err != nil {
			return ws.Channel{}, nil, rejected("%s: %v", m.Topic, err)
		}
		if c.Type != "create" && c.Type != "update" {
			return ws.Channel{}, nil, rejected("%s: type %q is not create or update", m.Topic, c.Type)
		}
		if _, err := events.ParseResolution(c.Resolution); err != nil || c.Symbol == "" {
			return ws.Channel{}, nil, rejected("%s: symbol %q, resolution %q", m.Topic, c.Symbol, c.Resolution)
		}
		var ts candleTs
		if len(c.Candle) == 0 || c.Candle[0] != '{' || json.Unmarshal(c.Candle, &ts) != nil || ts.Ts == nil {
			return ws.Channel{}, nil, rejected("%s: candle is not an object with ts", m.Topic)
		}
		if len(c.Trades) > 0 && string(c.Trades) != "null" && c.Trades[0] != '[' {
			return ws.Channel{}, nil, rejected("%s: trades is not an array", m.Topic)
		}
		h.learn(c.Symbol)
		id := ws.Channel{Type: ws.Candle, Symbol: c.Symbol, Resolution: c.Resolution}
		return id, func(ch *channel) []byte {
			// A late fill changes an older bucket: subscribers get it, the init keeps the newest.
			if ch.candle == nil || *ts.Ts >= ch.candleTs {
				ch.candle, ch.candleTs = c.Candle, *ts.Ts
			}
			trades := c.Trades
			if string(trades) == "null" {
				trades = nil
			}
			return ws.AppendCandleChange(make([]byte, 0, len(c.Candle)+len(trades)+64), c.Type, c.Candle, trades, ch.seq)
		}, nil
	case events.TopicEdgeMarkets, events.TopicEdgePricing:
		var k keyed
		if len(m.Value) == 0 || m.Value[0] != '{' || json.Unmarshal(m.Value, &k) != nil || k.Symbol == "" {
			return ws.Channel{}, nil, rejected("%s: value is not an object with a symbol", m.Topic)
		}
		h.learn(k.Symbol)
		t := ws.Markets
		if m.Topic == events.TopicEdgePricing {
			t = ws.Pricing
		}
		id := ws.Channel{Type: t}
		value := m.Value
		return id, func(ch *channel) []byte {
			ch.setItem(k.Symbol, value)
			return ws.AppendUpdate(make([]byte, 0, len(ch.prefix)+len(value)+48), ch.prefix, id, value, ch.seq)
		}, nil
	case events.TopicEdgeNotifications:
		var k keyed
		if len(m.Value) == 0 || m.Value[0] != '{' || json.Unmarshal(m.Value, &k) != nil {
			return ws.Channel{}, nil, rejected("%s: value is not an object", m.Topic)
		}
		auth := string(m.Key)
		if auth == "" {
			auth = k.AuthorityID
		}
		if !events.ValidPublicKey(auth) {
			return ws.Channel{}, nil, rejected("%s: key %q is not an authority", m.Topic, auth)
		}
		id := ws.Channel{Type: ws.Notifications, Authority: auth}
		value := m.Value
		return id, func(ch *channel) []byte {
			return ws.AppendUpdate(make([]byte, 0, len(ch.prefix)+len(value)+48), ch.prefix, id, value, ch.seq)
		}, nil
	}
	return ws.Channel{}, nil, rejected("unknown topic %s", m.Topic)
}

// WarmCandles takes the newest candle of every market and resolution, as the market service's
// snapshot route gives them, with seqs, the seq of each candle channel's last message the snapshot
// includes (a channel it does not name has had none: 0). A snapshot only fills channels the replica
// knows nothing of: one that has had a message since the replica started reading is current from its
// messages alone, every one after its first having been read. seqs nil: a snapshot without numbers,
// whose candles are taken where newer than the channel's, its seq left as it is.
func (h *Hub) WarmCandles(candles []json.RawMessage, seqs map[string]int64) error {
	for _, raw := range candles {
		var c struct {
			Symbol     string `json:"symbol"`
			Resolution string `json:"resolution"`
			Ts         *int64 `json:"ts"`
		}
		if err := json.Unmarshal(raw, &c); err != nil || c.Symbol == "" || c.Ts == nil {
			return fmt.Errorf("candle snapshot: %s is not a candle", clip(raw))
		}
		if _, err := events.ParseResolution(c.Resolution); err != nil {
			return fmt.Errorf("candle snapshot: resolution %q", c.Resolution)
		}
		h.learn(c.Symbol)
		ch := h.lock(ws.Channel{Type: ws.Candle, Symbol: c.Symbol, Resolution: c.Resolution}, true)
		switch {
		case seqs != nil && !ch.known:
			ch.candle, ch.candleTs = raw, *c.Ts
			ch.seq, ch.known = seqs[ch.name], true
			ch.restart(ch.seq)
		case seqs == nil && (ch.candle == nil || *c.Ts > ch.candleTs):
			ch.candle, ch.candleTs = raw, *c.Ts
		}
		ch.lk.Unlock()
	}
	return nil
}

// WarmItems takes every market's object of the markets or pricing snapshot and seqs, which names the
// channel's seq the snapshot is current to. As WarmCandles, a numbered snapshot fills a channel the
// replica knows nothing of, seq included; otherwise it adds the markets the channel has not seen.
func (h *Hub) WarmItems(t ws.ChannelType, items []json.RawMessage, seqs map[string]int64) error {
	if t != ws.Markets && t != ws.Pricing {
		return fmt.Errorf("no snapshot for channel type %s", t)
	}
	ch := h.lock(ws.Channel{Type: t}, true)
	defer ch.lk.Unlock()
	// A market missing from a channel the replica knows had no message since it started reading:
	// the snapshot's object is still its latest.
	numbered := seqs != nil && !ch.known
	for _, raw := range items {
		var k keyed
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &k) != nil || k.Symbol == "" {
			return fmt.Errorf("%s snapshot: %s has no symbol", t, clip(raw))
		}
		h.learn(k.Symbol)
		if _, ok := ch.items[k.Symbol]; !ok || numbered {
			ch.setItem(k.Symbol, raw)
		}
	}
	if numbered {
		ch.seq, ch.known = seqs[ch.name], true
		ch.restart(ch.seq)
	}
	return nil
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Sweep evicts what is older than the replay window and removes notification channels nobody
// listens to that have nothing left to replay. Run calls it every second.
func (h *Hub) Sweep() {
	before := h.now().Add(-h.cfg.ReplayWindow)
	h.mu.RLock()
	chans := make([]*channel, 0, len(h.channels))
	for _, ch := range h.channels {
		chans = append(chans, ch)
	}
	h.mu.RUnlock()
	var gone []*channel
	for _, ch := range chans {
		ch.lk.Lock()
		ch.evict(before, h.cfg.ReplayMax)
		if ch.id.Type == ws.Notifications && len(ch.subs) == 0 && len(ch.replay) == 0 {
			gone = append(gone, ch)
		}
		ch.lk.Unlock()
	}
	if len(gone) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range gone {
		ch.lk.Lock()
		if len(ch.subs) == 0 && len(ch.replay) == 0 && !ch.dead {
			// Its seq goes with it: the channel's next message (or a subscription, which then
			// fetches nothing and waits for one) starts it again.
			ch.dead = true
			delete(h.channels, ch.name)
		}
		ch.lk.Unlock()
	}
}

// Channels counts the channels held, for tests of the sweep.
func (h *Hub) Channels() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.channels)
}

// sortedNames are the names of subs in a stable order, so that an unsubscribe from everything
// acknowledges and purges the same way every time.
func sortedNames(subs map[string]*subscription) []string {
	names := make([]string, 0, len(subs))
	for n := range subs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
