// Package edge feeds the hub: it reads every partition of the edge topics from the offsets where the
// replica starts, and warms the channels' state from the owning services' snapshot routes.
package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/services/ws/hub"
)

// Reader reads the edge topics into the hub. Each replica reads every partition itself, from the end
// offsets it finds at start, commits nothing and belongs to no group: what came before is in the
// snapshots, taken once every partition is being read, and a message's place in its channel is the
// seq its producer gave it, the same on every replica.
type Reader struct {
	kc     kafka.Config
	topics []string
	hub    *hub.Hub
	logger *slog.Logger
	tracer trace.Tracer // nil: no spans

	mu      sync.Mutex
	started bool
	err     error
	stopped []string // partitions whose reader ended while the edge runs
	ready   chan struct{}
}

// NewReader reads topics into h; tp may be nil.
func NewReader(kc kafka.Config, topics []string, h *hub.Hub, logger *slog.Logger, tp trace.TracerProvider) *Reader {
	r := &Reader{kc: kc, topics: topics, hub: h, logger: logger, ready: make(chan struct{})}
	if tp != nil {
		r.tracer = tp.Tracer("tidemark/ws")
	}
	return r
}

// Started is closed once every partition has a reader positioned at its start.
func (r *Reader) Started() <-chan struct{} { return r.ready }

// Ready is nil once every partition is being read.
func (r *Reader) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.stopped) > 0 {
		return fmt.Errorf("edge topics: no longer reading %s", strings.Join(r.stopped, ", "))
	}
	if r.started {
		return nil
	}
	if r.err != nil {
		return fmt.Errorf("edge topics: %w", r.err)
	}
	return errors.New("edge topics: not read yet")
}

// Run looks up where each partition ends (retrying while the topics cannot be reached), then reads
// every partition from there until ctx ends.
func (r *Reader) Run(ctx context.Context) error {
	var ends map[string]map[int]int64
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		var err error
		if ends, err = r.kc.EndOffsets(ctx, r.topics...); err == nil {
			break
		}
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		r.logger.Warn("edge topics unreachable, retrying", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
	r.hub.Start()
	var wg sync.WaitGroup
	for _, topic := range r.topics {
		parts := make([]int, 0, len(ends[topic]))
		for p := range ends[topic] {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		for _, p := range parts {
			rd := r.kc.NewPartitionReader(topic, p, 4096)
			if err := rd.SetOffset(ends[topic][p]); err != nil {
				return fmt.Errorf("position %s/%d: %w", topic, p, err)
			}
			wg.Go(func() {
				defer rd.Close()
				r.read(ctx, topic, p, rd)
			})
		}
	}
	r.mu.Lock()
	r.started, r.err = true, nil
	r.mu.Unlock()
	close(r.ready)
	wg.Wait()
	return nil
}

func (r *Reader) read(ctx context.Context, topic string, partition int, rd *kafkago.Reader) {
	for {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() == nil {
				// kafka-go retries what can be retried; what it returns ends the partition, and the
				// replica reports not ready so that it is replaced rather than serving a stale channel.
				r.logger.Error("edge partition stopped", "topic", topic, "partition", partition, "err", err)
				r.mu.Lock()
				r.stopped = append(r.stopped, fmt.Sprintf("%s/%d", topic, partition))
				r.mu.Unlock()
			}
			return
		}
		msg := hub.Message{Topic: topic, Partition: m.Partition, Offset: m.Offset, Time: m.Time, Key: m.Key, Value: m.Value}
		msg.Channel, _ = kafka.Header(m, events.HeaderEdgeChannel)
		if v, ok := kafka.Header(m, events.HeaderEdgeSeq); ok {
			msg.Seq, _ = strconv.ParseInt(v, 10, 64) // a malformed one is 0: the hub rejects it
		}
		var span trace.Span
		if r.tracer != nil {
			_, span = r.tracer.Start(kafka.TraceContext(ctx, m), "ws fanout "+topic, trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(attribute.Int("messaging.kafka.partition", partition), attribute.Int64("messaging.kafka.offset", m.Offset)))
		}
		if err := r.hub.Apply(msg); err != nil {
			r.logger.Warn("edge message skipped", "topic", topic, "partition", partition, "offset", m.Offset, "err", err)
		}
		if span != nil {
			span.End()
		}
	}
}

// Source is a snapshot route of an owning service's internal port:
// {"success":true,"data":[...],"seqs":{<channel>:<seq>,...}}, seqs the seq of each channel's last
// message the data includes (absent from a service that does not number its messages: nil).
type Source struct {
	Name  string // for readiness and logs: "market candles"
	URL   string // the full URL; empty: the service is not deployed, nothing to warm from
	Apply func(data []json.RawMessage, seqs map[string]int64) error
}

// Warmer takes every configured snapshot once, retrying each until it answers.
type Warmer struct {
	sources []Source
	client  *http.Client
	logger  *slog.Logger

	mu      sync.Mutex
	pending map[string]error // by source name; nil error: not tried yet
}

// NewWarmer warms from the sources that have a URL.
func NewWarmer(sources []Source, client *http.Client, logger *slog.Logger) *Warmer {
	w := &Warmer{client: client, logger: logger, pending: map[string]error{}}
	for _, s := range sources {
		if s.URL != "" {
			w.sources = append(w.sources, s)
			w.pending[s.Name] = nil
		}
	}
	return w
}

// Ready is nil once every snapshot was taken.
func (w *Warmer) Ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []string
	for _, s := range w.sources {
		err, waiting := w.pending[s.Name]
		switch {
		case !waiting:
		case err != nil:
			errs = append(errs, fmt.Sprintf("snapshot %s: %v", s.Name, err))
		default:
			errs = append(errs, fmt.Sprintf("snapshot %s: not taken yet", s.Name))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(errs, "; "))
}

// Run takes the snapshots, retrying those that fail with backoff; it returns once all are taken
// (nil) or ctx ends (ctx's error).
func (w *Warmer) Run(ctx context.Context) error {
	for wait := 250 * time.Millisecond; ; wait = min(2*wait, 10*time.Second) {
		left := 0
		for _, s := range w.sources {
			w.mu.Lock()
			_, waiting := w.pending[s.Name]
			w.mu.Unlock()
			if !waiting {
				continue
			}
			err := w.take(ctx, s)
			w.mu.Lock()
			if err == nil {
				delete(w.pending, s.Name)
			} else {
				w.pending[s.Name] = err
				left++
			}
			w.mu.Unlock()
			if err != nil && ctx.Err() == nil {
				w.logger.Warn("snapshot failed, retrying", "source", s.Name, "err", err, "in", wait)
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Refresh takes every snapshot again, once, and reports what failed; readiness is not affected, as
// the edge has warmed and its topics keep it current. Snapshots only add what the edge has not seen
// (a market it learned of from no message: one whose last trade predates its start, or whose history
// was loaded after it), so taking them again never moves a channel back.
func (w *Warmer) Refresh(ctx context.Context) error {
	var errs []error
	for _, s := range w.sources {
		if err := w.take(ctx, s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Fetch takes the snapshot of the source called name with query (symbol=SOL-PERP, say) once, for a
// subscription that found nothing to send; it does not affect readiness.
func (w *Warmer) Fetch(ctx context.Context, name string, query url.Values) error {
	for _, s := range w.sources {
		if s.Name == name {
			s.URL += "?" + query.Encode()
			return w.take(ctx, s)
		}
	}
	return fmt.Errorf("no snapshot source %s", name)
}

func (w *Warmer) take(ctx context.Context, s Source) error {
	data, seqs, err := Get(ctx, w.client, s.URL)
	if err != nil {
		return err
	}
	return s.Apply(data, seqs)
}

// Get reads the snapshot route at url (a Source's answer) within 30 seconds at most: its data and
// its seqs (nil when it names none).
func Get(ctx context.Context, client *http.Client, url string) ([]json.RawMessage, map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	var body struct {
		Success bool              `json:"success"`
		Data    []json.RawMessage `json:"data"`
		Seqs    map[string]int64  `json:"seqs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if !body.Success || body.Data == nil {
		return nil, nil, fmt.Errorf("GET %s: not a {success:true, data:[...]} answer", url)
	}
	return body.Data, body.Seqs, nil
}

// ChannelSeq reads one channel's seq from the snapshot route at url (the notify service's
// notifications route, say): an answer that does not name the channel is an error, not 0, since
// the edge would acknowledge a subscription with a seq nobody gave it.
func ChannelSeq(ctx context.Context, client *http.Client, url, channel string) (int64, error) {
	_, seqs, err := Get(ctx, client, url)
	if err != nil {
		return 0, err
	}
	seq, ok := seqs[channel]
	if !ok {
		return 0, fmt.Errorf("GET %s: the answer names no seq of %s", url, channel)
	}
	return seq, nil
}
