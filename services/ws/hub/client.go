package hub

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
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

// Client is one connection. Its reader goroutine parses requests and manages subscriptions; its
// queue is written by one writer at a time: a worker of its shard while writes complete at once, or a
// goroutine of its own while the client is slow to read, so that a slow client never holds up the
// others and an idle one costs no goroutine.
type Client struct {
	h     *Hub
	conn  *websocket.Conn
	nc    net.Conn
	shard *shard

	subs map[string]*subscription // the reader's alone

	mu        sync.Mutex
	queue     []*frame
	head      int
	closing   bool
	closeF    *frame // the close frame to send; nil: just drop the connection
	abort     bool   // overflowed: the queue is dropped and a blocked write cut short
	scheduled bool   // in its shard's ready list, or being written by a worker
	slow      bool   // a goroutine of its own writes it
	finished  bool   // finish has started
	ping      bool   // a ping is due
	lastPing  time.Time
	pending   net.Buffers // bytes of a write that timed out, to send before anything else
	pendingF  []*frame    // the frames those bytes finish

	readerDone chan struct{}
	writerDone chan struct{}
	doneOnce   sync.Once

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
	c := &Client{h: h, conn: conn, nc: conn.NetConn(), subs: map[string]*subscription{}, shard: h.nextShard(),
		readerDone: make(chan struct{}), writerDone: make(chan struct{}),
		tokens: float64(h.cfg.MessageBurst), last: h.now(), lastPing: time.Now()}
	h.clientsMu.Lock()
	if h.closing {
		h.clientsMu.Unlock()
		c.close(CloseGoingAway, "server shutting down")
	} else {
		h.clients[c] = struct{}{}
		h.clientsMu.Unlock()
	}
	h.clientsWG.Add(1)
	h.m.connections.Inc()
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
		c.h.m.overflows.Inc()
		c.h.m.disconnected(ClosePolicy)
		// A write blocked on a client that does not read returns at once.
		_ = c.nc.SetWriteDeadline(time.Now())
		c.scheduleLocked()
		return
	}
	c.queue = append(c.queue, f)
	c.scheduleLocked()
}

// scheduleLocked hands the client to a writer, and unlocks c.mu.
func (c *Client) scheduleLocked() {
	if c.scheduled || c.slow || c.finished {
		c.mu.Unlock()
		return
	}
	c.scheduled = true
	c.mu.Unlock()
	c.shard.push(c)
}

// close asks the writer to send a close frame (code 0: none) after what is queued, and end.
func (c *Client) close(code int, reason string) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	c.h.m.disconnected(code)
	if code != 0 {
		c.closeF = closeFrame(code, reason)
	}
	c.scheduleLocked()
}

// dueForPing queues a ping when the last one is PingInterval old.
func (c *Client) dueForPing(now time.Time) {
	c.mu.Lock()
	if c.closing || now.Sub(c.lastPing) < c.h.cfg.PingInterval {
		c.mu.Unlock()
		return
	}
	c.lastPing, c.ping = now, true
	c.scheduleLocked()
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

// maxBatch bounds one write: enough frames to amortise the system call, few enough that one client
// does not keep a worker long.
const (
	maxBatchFrames = 128
	maxBatchBytes  = 256 << 10
)

// fastWrite is how long a shard worker waits on one socket: a client whose socket does not take a
// batch at once gets a goroutine of its own (slow) until its queue drains.
const fastWrite = 20 * time.Millisecond

// shard is a set of clients written by one worker goroutine.
type shard struct {
	mu    sync.Mutex
	ready []*Client
	wake  chan struct{}

	// The worker's scratch space, reused for every batch it writes.
	frames []*frame
	bufs   net.Buffers
}

func (s *shard) push(c *Client) {
	s.mu.Lock()
	s.ready = append(s.ready, c)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run writes the ready clients, one batch each in turn, until stop is closed.
func (s *shard) run(stop <-chan struct{}) {
	var batch []*Client
	for {
		s.mu.Lock()
		batch, s.ready = s.ready, batch[:0]
		s.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-s.wake:
				continue
			case <-stop:
				return
			}
		}
		for i, c := range batch {
			c.service(s)
			batch[i] = nil
		}
	}
}

// take removes the next batch from the queue.
func (c *Client) take(frames []*frame) (_ []*frame, closing bool, closeF *frame, abort, ping, drained bool) {
	size := 0
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
	ping, c.ping = c.ping, false
	return frames, c.closing, c.closeF, c.abort, ping, c.head == len(c.queue)
}

// service writes one batch of a scheduled client, from the worker of shard s.
func (c *Client) service(s *shard) {
	c.mu.Lock()
	frames, _, closeF, abort, ping, _ := c.take(s.frames[:0])
	if abort {
		c.mu.Unlock()
		clear(frames)
		c.startFinish(closeF) // finish completes a frame left half written before the close frame
		return
	}
	pending, pendingF := c.pending, c.pendingF
	c.pending, c.pendingF = nil, nil
	c.mu.Unlock()
	if ping {
		frames = append(frames, pingFrame)
	}
	if len(frames) > 0 || len(pending) > 0 {
		bufs := append(s.bufs[:0], pending...)
		for _, f := range frames {
			bufs = append(bufs, f.data)
		}
		if len(pendingF) > 0 {
			frames = append(pendingF, frames...)
		}
		done, err := c.writeFrames(bufs, frames, fastWrite)
		var rest net.Buffers
		var restF []*frame
		if err != nil {
			// Copies: the worker's scratch space is reused.
			rest, restF = slices.Clone(done.rest), slices.Clone(done.frames)
		}
		clear(bufs)
		clear(frames)
		s.bufs, s.frames = bufs[:0], frames[:0]
		var ne net.Error
		switch {
		case err != nil && errors.As(err, &ne) && ne.Timeout():
			// The socket is full: a goroutine of its own finishes the write and the queue.
			c.mu.Lock()
			c.pending, c.pendingF = rest, restF
			c.slow, c.scheduled = true, false
			c.mu.Unlock()
			c.h.m.slow.Inc()
			go c.writeSlow()
			return
		case err != nil:
			c.drop()
			return
		}
	}
	// A close or an overflow may have come during the write (its schedule found this client
	// scheduled): look again.
	c.mu.Lock()
	if c.abort || (c.closing && c.head == len(c.queue)) {
		closeF := c.closeF
		c.mu.Unlock()
		c.startFinish(closeF)
		return
	}
	if c.head < len(c.queue) || c.ping {
		c.mu.Unlock()
		c.shard.push(c) // still scheduled: more after the others of the shard had their turn
		return
	}
	c.scheduled = false
	c.mu.Unlock()
}

// unwritten is what a write that timed out left.
type unwritten struct {
	rest   net.Buffers
	frames []*frame
}

// writeFrames writes bufs, the bytes of frames one for one (the first possibly a frame's rest), with
// one system call; on a timeout it returns what is left. Written frames are counted.
func (c *Client) writeFrames(bufs net.Buffers, frames []*frame, timeout time.Duration) (unwritten, error) {
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	n, err := bufs.WriteTo(c.nc) // leaves in bufs what it did not write, one element per frame
	c.h.m.bytes.Add(float64(n))
	written := len(frames) - len(bufs)
	c.count(frames[:written])
	if err != nil {
		return unwritten{rest: bufs, frames: frames[written:]}, err
	}
	return unwritten{}, nil
}

func (c *Client) count(frames []*frame) {
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
}

// writeSlow writes a client that cannot keep up with the shard's pace, with blocking writes of up to
// WriteTimeout, until its queue is empty; then the shard has it back.
func (c *Client) writeSlow() {
	for {
		c.mu.Lock()
		frames, closing, closeF, abort, ping, drained := c.take(nil)
		if abort {
			c.mu.Unlock()
			c.startFinish(closeF)
			return
		}
		pending, pendingF := c.pending, c.pendingF
		c.pending, c.pendingF = nil, nil
		if !closing && len(frames) == 0 && len(pending) == 0 && !ping {
			c.slow = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if ping {
			frames = append(frames, pingFrame)
		}
		bufs := pending
		for _, f := range frames {
			bufs = append(bufs, f.data)
		}
		if len(bufs) > 0 {
			if done, err := c.writeFrames(bufs, append(pendingF, frames...), c.h.cfg.WriteTimeout); err != nil {
				c.mu.Lock()
				aborted := c.abort
				closeF = c.closeF
				c.pending = done.rest // a frame cut short is completed before the close frame
				c.mu.Unlock()
				if aborted {
					c.startFinish(closeF)
				} else {
					c.drop()
				}
				return
			}
		}
		if closing && drained {
			c.startFinish(closeF)
			return
		}
	}
}

// startFinish ends the connection from a goroutine of its own: a close frame, the client's answer,
// then the socket closed.
func (c *Client) startFinish(closeF *frame) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return
	}
	c.finished = true
	c.mu.Unlock()
	go c.finish(closeF)
}

// finish sends the close frame, waits for the client's (the reader sees it) and drops the connection.
// A frame a timed-out write left half sent is completed first: the close frame must start at a frame
// boundary to be read as one.
func (c *Client) finish(closeF *frame) {
	c.mu.Lock()
	var rest []byte
	if len(c.pending) > 0 {
		rest = c.pending[0]
	}
	c.pending, c.pendingF = nil, nil
	c.mu.Unlock()
	if closeF != nil {
		_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
		bufs := net.Buffers{rest, closeF.data}
		if _, err := bufs.WriteTo(c.nc); err == nil {
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
	if !c.closing { // a write failed before any close: no handshake
		c.h.m.disconnected(0)
	}
	c.closing, c.finished = true, true
	c.queue, c.head = nil, 0
	c.mu.Unlock()
	_ = c.nc.Close()
	c.doneOnce.Do(func() { close(c.writerDone) })
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

// allow takes a token of the client's message rate, refilled as the hub's clock moves.
func (c *Client) allow() bool {
	now := c.h.now()
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
	if id.Type == ws.Candle && h.lacks(id) {
		// A market that traded since the last snapshot at a resolution no message has named yet, or
		// one the replica has not heard of: the owning service has its candle.
		h.fetchCandles(id.Symbol)
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
	// A wallet this replica has had no message of since it started: its channel's seq is the notify
	// service's count, not 0, or the wallet's next notification would look like a gap.
	var fetched *int64
	if id.Type == ws.Notifications && h.unnumbered(id) {
		if seq, ok := h.notificationsSeq(id.Authority); ok {
			fetched = &seq
		}
	}
	ch := h.lock(id, true)
	defer ch.lk.Unlock()
	if !again {
		s = &subscription{c: c, ch: ch}
	}
	// ack is the acknowledgement's seq and after the messages that follow it: the channel's
	// present, or the fetched seq and what the replica read of the channel while it was fetched.
	ack, after := ch.seq, []*frame(nil)
	if fetched != nil {
		ack, after = ch.adopt(*fetched)
		if again {
			// Subscribed already, the client got those messages as they came.
			ack, after = ch.seq, nil
		}
	}
	var resumed *bool
	if req.Since != nil && !again {
		ok, skip := ch.resumable(*req.Since)
		resumed = &ok
		result := "init"
		if ok {
			s.skip = skip
			result = "replayed"
		}
		h.m.resumes.WithLabelValues(result).Inc()
	}
	if resumed != nil && *resumed {
		ack, after = ch.seq, ch.missed(*req.Since)
	}
	c.enqueueOf(ch, ws.AckMessage(id, ack, resumed))
	if (resumed == nil || !*resumed) && id.Type != ws.Notifications {
		c.enqueueOf(ch, ws.InitMessage(id, ch.snapshot(), ch.seq))
	}
	for _, f := range after {
		c.enqueue(f)
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
