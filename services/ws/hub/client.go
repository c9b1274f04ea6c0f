package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/ws"
)

// Close codes the hub sends.
const (
	CloseGoingAway = websocket.CloseGoingAway       // 1001: the replica stops; reconnect to another
	ClosePolicy    = websocket.ClosePolicyViolation // 1008: too slow a reader, or no pong
	CloseTooBig    = websocket.CloseMessageTooBig   // 1009
)

// upgrader answers every origin: the feed is public data, read by browsers from any site, and no
// credential rides on the connection. Frames are written by the hub itself (writeBatch), so gorilla
// keeps no write buffer per connection; compression is not offered, since a frame compressed per
// connection could not be shared.
var upgrader = websocket.Upgrader{
	ReadBufferSize:  512,
	WriteBufferPool: &sync.Pool{},
	CheckOrigin:     func(*http.Request) bool { return true },
	// A failed handshake is answered in the API's error envelope, like every other error.
	Error: func(w http.ResponseWriter, _ *http.Request, status int, reason error) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Sec-Websocket-Version", "13")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]any{"success": false, "message": "websocket handshake: " + reason.Error()})
		_, _ = w.Write(b)
	},
}

// Client is one connection: its reader parses requests and manages subscriptions, its writer alone
// writes to the socket, from a bounded queue.
type Client struct {
	h    *Hub
	conn *websocket.Conn
	nc   net.Conn

	subs map[string]*subscription // the reader's alone

	mu      sync.Mutex
	queue   []*frame
	head    int
	closing bool
	closeF  *frame // the close frame to send; nil: just drop the connection
	abort   bool   // overflowed: the queue is dropped and a blocked write cut short
	wake    chan struct{}

	readerDone chan struct{}
	writerDone chan struct{}

	tokens float64
	last   time.Time
}

// ServeHTTP upgrades GET /ws to a WebSocket connection served by the hub.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUpgradeRequired)
		_, _ = w.Write([]byte(`{"success":false,"message":"/ws is a WebSocket endpoint: send an Upgrade: websocket request"}`))
		return
	}
	h.clientsMu.Lock()
	closing := h.closing
	h.clientsMu.Unlock()
	if closing {
		httpapi.WriteError(w, r, fault.Errorf(fault.Unavailable, "the edge is shutting down: connect again"), h.logger)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // gorilla answered the handshake's error
	}
	if tcp, ok := conn.NetConn().(*net.TCPConn); ok && h.cfg.SocketBuffer > 0 {
		_ = tcp.SetWriteBuffer(h.cfg.SocketBuffer)
	}
	c := &Client{h: h, conn: conn, nc: conn.NetConn(), subs: map[string]*subscription{},
		wake: make(chan struct{}, 1), readerDone: make(chan struct{}), writerDone: make(chan struct{}),
		tokens: float64(h.cfg.MessageBurst), last: time.Now()}
	h.clientsMu.Lock()
	if h.closing {
		h.clientsMu.Unlock()
		c.close(CloseGoingAway, "server shutting down")
	} else {
		h.clients[c] = struct{}{}
		h.clientsMu.Unlock()
	}
	h.clientsWG.Add(2)
	h.m.connections.Inc()
	go c.write()
	go c.read()
}

// enqueue puts f in the queue; a full queue disconnects the client.
func (c *Client) enqueue(f *frame) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if len(c.queue)-c.head >= c.h.cfg.QueueSize {
		c.closing, c.abort = true, true
		c.closeF = closeFrame(ClosePolicy, fmt.Sprintf("queue overflow: more than %d messages waiting, read faster", c.h.cfg.QueueSize))
		c.queue, c.head = nil, 0
		c.mu.Unlock()
		c.h.m.overflows.Inc()
		// A write blocked on a client that does not read returns at once.
		_ = c.nc.SetWriteDeadline(time.Now())
		c.signal()
		return
	}
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	c.signal()
}

func (c *Client) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// close asks the writer to send a close frame (code 0: none) after what is queued, and end.
func (c *Client) close(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.closing = true
	if code != 0 {
		c.closeF = closeFrame(code, reason)
	}
	c.signal()
}

// purge takes back the queued frames of ch.
func (c *Client) purge(ch *channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.queue[:c.head]
	for _, f := range c.queue[c.head:] {
		if f.ch != ch {
			kept = append(kept, f)
		}
	}
	clear(c.queue[len(kept):])
	c.queue = kept
}

// warmWait is how long a subscription made while the replica starts waits for its snapshots.
const warmWait = 5 * time.Second

// maxBatch bounds one write: enough frames to amortise the system call, few enough that one slow
// write does not hold many.
const (
	maxBatchFrames = 128
	maxBatchBytes  = 256 << 10
)

func (c *Client) write() {
	defer c.h.clientsWG.Done()
	defer close(c.writerDone)
	ticker := time.NewTicker(c.h.cfg.PingInterval)
	defer ticker.Stop()
	var (
		frames []*frame
		bufs   net.Buffers
		ping   bool
	)
	for {
		select {
		case <-c.wake:
		case <-ticker.C:
			ping = true
		}
		for {
			frames = frames[:0]
			size := 0
			c.mu.Lock()
			for c.head < len(c.queue) && len(frames) < maxBatchFrames && size < maxBatchBytes {
				f := c.queue[c.head]
				c.queue[c.head] = nil
				c.head++
				frames = append(frames, f)
				size += len(f.data)
			}
			if c.head == len(c.queue) {
				// Drained: let a burst's backing array go rather than hold it while idle.
				if cap(c.queue) > 64 {
					c.queue = nil
				} else {
					c.queue = c.queue[:0]
				}
				c.head = 0
			}
			closing, closeF, abort, drained := c.closing, c.closeF, c.abort, c.head == len(c.queue)
			c.mu.Unlock()
			if abort {
				frames = frames[:0]
			}
			if ping {
				frames = append(frames, pingFrame)
				ping = false
			}
			if len(frames) > 0 && !abort {
				bufs = bufs[:0]
				for _, f := range frames {
					bufs = append(bufs, f.data)
				}
				if err := c.writeBatch(bufs, frames); err != nil {
					c.drop()
					return
				}
			}
			if closing && (drained || abort) {
				c.finish(closeF)
				return
			}
			if drained {
				break
			}
		}
	}
}

// writeBatch writes frames with one system call and counts them.
func (c *Client) writeBatch(bufs net.Buffers, frames []*frame) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.h.cfg.WriteTimeout))
	n, err := bufs.WriteTo(c.nc)
	c.h.m.bytes.Add(float64(n))
	if err != nil {
		return err
	}
	now := time.Now()
	sent := 0
	for _, f := range frames {
		if f == pingFrame {
			continue
		}
		sent++
		if !f.at.IsZero() {
			c.h.m.latency.Observe(now.Sub(f.at).Seconds())
		}
	}
	c.h.m.sent.Add(float64(sent))
	return nil
}

// finish sends the close frame, waits for the client's (the reader sees it) and drops the connection.
func (c *Client) finish(closeF *frame) {
	if closeF != nil {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		if _, err := c.nc.Write(closeF.data); err == nil {
			select {
			case <-c.readerDone:
			case <-time.After(2 * time.Second):
			}
		}
	}
	c.drop()
}

func (c *Client) drop() {
	c.mu.Lock()
	c.closing = true
	c.queue, c.head = nil, 0
	c.mu.Unlock()
	_ = c.nc.Close()
}

// read runs the connection's requests until it ends, then takes its subscriptions back.
func (c *Client) read() {
	defer c.h.clientsWG.Done()
	h := c.h
	idle := h.cfg.PingInterval + h.cfg.PongTimeout
	_ = c.conn.SetReadDeadline(time.Now().Add(idle))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(idle)) })
	c.conn.SetCloseHandler(func(code int, _ string) error {
		// Answered by the writer, after what is queued; gorilla would write it from here.
		if code == websocket.CloseNoStatusReceived {
			code = websocket.CloseNormalClosure
		}
		c.close(code, "")
		return nil
	})
	for {
		typ, r, err := c.conn.NextReader()
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				c.close(ClosePolicy, fmt.Sprintf("no pong or message within %s", idle))
			case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived) ||
				errors.As(err, new(*websocket.CloseError)):
				// The close handler queued the answer.
			default:
				c.close(0, "")
			}
			break
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(idle))
		msg, tooBig, err := c.readMessage(r)
		if err != nil {
			c.close(CloseTooBig, err.Error())
			break
		}
		switch {
		case !c.allow():
			c.reply(nil, fmt.Sprintf("too many messages: at most %g a second, %d at once", h.cfg.MessageRate, h.cfg.MessageBurst))
		case typ == websocket.BinaryMessage:
			c.reply(nil, "binary frames are not accepted: send JSON text frames")
		case tooBig:
			c.reply(nil, fmt.Sprintf("message exceeds %d bytes", h.cfg.MaxMessageBytes))
		default:
			c.handle(msg)
		}
	}
	close(c.readerDone)
	c.close(0, "")
	<-c.writerDone
	for name, s := range c.subs {
		s.ch.lk.Lock()
		s.ch.removeSub(s)
		s.ch.lk.Unlock()
		h.m.subscriptions.WithLabelValues(string(s.ch.id.Type)).Dec()
		delete(c.subs, name)
	}
	h.clientsMu.Lock()
	delete(h.clients, c)
	h.clientsMu.Unlock()
	h.m.connections.Dec()
}

// readMessage reads a message of at most MaxMessageBytes; a larger one is skipped (tooBig), one over
// MaxFrameBytes is an error that ends the connection.
func (c *Client) readMessage(r io.Reader) (msg []byte, tooBig bool, err error) {
	max := c.h.cfg.MaxMessageBytes
	buf := make([]byte, max+1)
	n, err := io.ReadFull(r, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return buf[:n], false, nil
	case err != nil:
		return nil, false, err
	}
	skipped, err := io.CopyN(io.Discard, r, MaxFrameBytes)
	if err == nil && skipped == MaxFrameBytes {
		return nil, true, fmt.Errorf("message exceeds %d bytes", MaxFrameBytes)
	}
	return nil, true, nil
}

// allow takes a token of the client's message rate.
func (c *Client) allow() bool {
	now := time.Now()
	c.tokens = min(float64(c.h.cfg.MessageBurst), c.tokens+now.Sub(c.last).Seconds()*c.h.cfg.MessageRate)
	c.last = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// reply queues a message to this client alone; an error message when msg is nil.
func (c *Client) reply(ch *channel, errMsg string) {
	c.h.m.errors.Inc()
	f := newFrame(opText, ws.ErrorMessage(errMsg))
	f.ch = ch
	c.enqueue(f)
}

func (c *Client) handle(msg []byte) {
	req, err := ws.ParseRequest(msg)
	if err != nil {
		c.reply(nil, err.Error())
		return
	}
	if req.Action == ws.Unsubscribe {
		c.unsubscribe(req)
		return
	}
	c.subscribe(req)
}

func (c *Client) subscribe(req ws.Request) {
	h := c.h
	id := req.Channel
	if !h.Warmed() {
		select {
		case <-h.warmed:
		case <-c.writerDone:
			return
		case <-time.After(warmWait):
			c.reply(nil, "the edge is starting: subscribe again in a few seconds")
			return
		}
	}
	if id.Type == ws.Candle && !h.KnownSymbol(id.Symbol) {
		c.reply(nil, fmt.Sprintf("candle: unknown symbol %q: no such market has traded", id.Symbol))
		return
	}
	name := id.Name()
	s, again := c.subs[name]
	if !again && len(c.subs) >= h.cfg.MaxSubscriptions {
		c.reply(nil, fmt.Sprintf("at most %d subscriptions per connection: unsubscribe from one first", h.cfg.MaxSubscriptions))
		return
	}
	ch := h.lock(id, true)
	defer ch.lk.Unlock()
	if !again {
		s = &subscription{c: c, ch: ch}
	}
	var resumed *bool
	if req.Since != nil && !again {
		ok, skip := ch.resumable(req.Since)
		resumed = &ok
		result := "init"
		if ok {
			s.skip = skip
			result = "replayed"
		}
		h.m.resumes.WithLabelValues(result).Inc()
	}
	c.enqueueOf(ch, ws.AckMessage(id, ch.pos, resumed))
	switch {
	case resumed != nil && *resumed:
		for _, f := range ch.missed(req.Since) {
			c.enqueue(f)
		}
	case id.Type != ws.Notifications:
		c.enqueueOf(ch, ws.InitMessage(id, ch.snapshot(), ch.pos))
	}
	if !again {
		ch.subs = append(ch.subs, s)
		c.subs[name] = s
		h.m.subscriptions.WithLabelValues(string(id.Type)).Inc()
	}
}

func (c *Client) enqueueOf(ch *channel, payload []byte) {
	f := newFrame(opText, payload)
	f.ch = ch
	c.enqueue(f)
}

func (c *Client) unsubscribe(req ws.Request) {
	drop := func(name string, s *subscription) {
		s.ch.lk.Lock()
		s.ch.removeSub(s)
		c.purge(s.ch)
		s.ch.lk.Unlock()
		delete(c.subs, name)
		c.h.m.subscriptions.WithLabelValues(string(s.ch.id.Type)).Dec()
	}
	if req.All {
		for _, name := range sortedNames(c.subs) {
			drop(name, c.subs[name])
		}
		c.enqueue(newFrame(opText, ws.UnsubscribedMessage(ws.Channel{})))
		return
	}
	if s, ok := c.subs[req.Channel.Name()]; ok {
		drop(req.Channel.Name(), s)
	}
	c.enqueue(newFrame(opText, ws.UnsubscribedMessage(req.Channel)))
}

// CloseAll closes every connection with code and reason and refuses new ones, then waits until they
// are gone or ctx-less timeout passes.
func (h *Hub) CloseAll(code int, reason string, timeout time.Duration) {
	h.clientsMu.Lock()
	h.closing = true
	clients := make([]*Client, 0, len(h.clients))
	for c := range h.clients {
		clients = append(clients, c)
	}
	h.clientsMu.Unlock()
	for _, c := range clients {
		c.close(code, reason)
	}
	done := make(chan struct{})
	go func() {
		h.clientsWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		h.logger.Warn("connections still open after the shutdown timeout", "timeout", timeout)
	}
}

// Connections counts the open connections.
func (h *Hub) Connections() int {
	h.clientsMu.Lock()
	defer h.clientsMu.Unlock()
	return len(h.clients)
}
