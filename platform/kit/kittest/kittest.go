// Package kittest is the test kit of every service: a real PostgreSQL database, the embedded Kafka
// broker, services started through the kit on a frozen clock, producers that wait until every service
// has stored what they produced, answers validated against the OpenAPI document, builders of valid
// protocol events, and the contract and fuzz walks over every documented operation.
//
//	func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }
//
//	func TestX(t *testing.T) {
//		s := kittest.Up(t, kittest.Options{}, service.Service(service.Config{}))
//		s.Ingest(t, kittest.Encode(t, events.TopicFills, kittest.Fill(kittest.SOLPerp, ts, 1, ...))...)
//		s.GetJSON(t, "/market/SOL-PERP/trades", 200, &page)
//	}
package kittest

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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/api/apitest"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/pg/pglocal"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/platform/telemetry"
)

// DefaultNow is the services' frozen clock unless Options say otherwise: a Thursday afternoon, so that
// days, weeks and months have history behind them.
var DefaultNow = time.Date(2026, 11, 19, 15, 30, 0, 0, time.UTC)

// PageKey signs the page tokens of every test service.
var PageKey = []byte("0123456789abcdef0123456789abcdef")

// Options tune a Stack; zero values take the defaults.
type Options struct {
	// Now is the services' data clock (default DefaultNow).
	Now time.Time
	// Settings are the kit's; a zero Ingest.BatchWait is 20ms, so tests do not wait on batches.
	Settings kit.Settings
	// Partitions of every topic (default 3).
	Partitions int
	// Logger receives every service's logs (default: warnings on stderr with -v, else nothing).
	Logger *slog.Logger
	// FirstAttemptsCommit lets every ingest batch commit at its first attempt. By default each
	// batch's first attempt fails once its sinks have written, just before the commit, and the
	// batch is written again: every test that ingests then proves that its sinks' writes can be
	// repeated after a rollback, as the consumer repeats them after any failure.
	FirstAttemptsCommit bool
}

// failFirstAttempts fails the first attempt at every batch, just before its commit.
func failFirstAttempts(_ context.Context, attempt int) error {
	if attempt == 1 {
		return errInjected
	}
	return nil
}

var errInjected = errors.New("kittest: the first attempt at every batch fails (Options.FirstAttemptsCommit)")

// Stack is services running on a fresh database and a fresh broker.
type Stack struct {
	Pool     *pgxpool.Pool
	Kafka    kafka.Config
	Registry *prometheus.Registry
	// Validator checks every answer Get gives against the OpenAPI document.
	Validator *apitest.Validator
	Now       time.Time
	instances []*kit.Instance

	ctx      context.Context
	rt       kit.Runtime
	settings kit.Settings
	services []kit.Service
	stops    []func() error // stops each instance's Run and returns its error
}

// Start starts services, each through kit.Start on one database of srv and one embedded broker, and
// runs them until the test ends (a service that stops with an error fails the test).
func Start(t testing.TB, srv *pglocal.Server, opts Options, services ...kit.Service) *Stack {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = DefaultNow
	}
	if opts.Settings.Ingest.BatchWait == 0 {
		opts.Settings.Ingest.BatchWait = 20 * time.Millisecond
	}
	if opts.Partitions == 0 {
		opts.Partitions = 3
	}
	if !opts.FirstAttemptsCommit && opts.Settings.Ingest.MinBackoff == 0 {
		// The injected failure is retried at once rather than after the production backoff.
		opts.Settings.Ingest.MinBackoff = time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	broker, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{Partitions: opts.Partitions})
	if err != nil {
		t.Fatalf("start broker: %v", err)
	}
	s := &Stack{
		Pool:      pgtest.NewPool(t, srv),
		Kafka:     kafka.Config{Brokers: broker.Brokers(), ClientID: "kittest"},
		Registry:  telemetry.NewRegistry(),
		Validator: apitest.New(t),
		Now:       opts.Now,
	}
	rt := kit.Runtime{
		Pool: s.Pool, Kafka: s.Kafka, Logger: opts.Logger, Registry: s.Registry, PageKey: PageKey,
		Now: func() time.Time { return opts.Now },
	}
	if !opts.FirstAttemptsCommit {
		rt.BeforeIngestCommit = failFirstAttempts
	}
	s.ctx, s.rt, s.settings, s.services = ctx, rt, opts.Settings, services
	var topics []string
	for _, svc := range services {
		inst, err := kit.Start(ctx, svc, rt, opts.Settings)
		if err != nil {
			cancel()
			broker.Close()
			t.Fatalf("start %s: %v", svc.Name, err)
		}
		s.instances = append(s.instances, inst)
		for _, topic := range inst.Topics() {
			if !slices.Contains(topics, topic) {
				topics = append(topics, topic)
			}
		}
	}
	if len(topics) > 0 {
		if err := kafka.EnsureTopics(ctx, s.Kafka.Brokers, opts.Partitions, topics...); err != nil {
			t.Fatalf("create topics: %v", err)
		}
	}
	for _, inst := range s.instances {
		s.stops = append(s.stops, s.run(inst))
	}
	t.Cleanup(func() {
		cancel()
		for _, stop := range s.stops {
			if err := stop(); err != nil {
				t.Errorf("service stopped with: %v", err)
			}
		}
		broker.Close()
	})
	return s
}

// run runs inst until the stack's context ends or the returned stop is called; stop returns Run's
// error, once.
func (s *Stack) run(inst *kit.Instance) func() error {
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
}

// Restart stops the service called name (its consumer commits what it has written, and leaves its
// group) and starts its declaration again on the same database and broker. With rewind, the offsets
// stored with its rows are deleted first, as if every message it consumed were produced again (a
// producer's retries, an indexer reading blocks again after a crash): the new consumer reads every
// message again, and only the records' natural keys tell it what is already stored. WaitConsumed
// then tells when it has read them all.
func (s *Stack) Restart(t testing.TB, name string, rewind bool) {
	t.Helper()
	for i, inst := range s.instances {
		if inst.Name() != name {
			continue
		}
		if err := s.stops[i](); err != nil {
			t.Fatalf("stop %s: %v", name, err)
		}
		if rewind {
			if _, err := s.Pool.Exec(context.Background(),
				`DELETE FROM `+pgx.Identifier{inst.Schema(), "kafka_offsets"}.Sanitize()+` WHERE consumer_group = $1`, inst.Group()); err != nil {
				t.Fatalf("rewind %s: %v", name, err)
			}
		}
		next, err := kit.Start(s.ctx, s.services[i], s.rt, s.settings)
		if err != nil {
			t.Fatalf("start %s again: %v", name, err)
		}
		s.instances[i], s.stops[i] = next, s.run(next)
		return
	}
	t.Fatalf("no service %s is running", name)
}

// Instance is the running service called name.
func (s *Stack) Instance(t testing.TB, name string) *kit.Instance {
	t.Helper()
	for _, inst := range s.instances {
		if inst.Name() == name {
			return inst
		}
	}
	t.Fatalf("no service %s is running", name)
	return nil
}

// Handler serves the public routes of every service, each request by the service whose prefix is the
// longest to match its path (the edge's rule); /openapi.json and unmatched paths go to the first.
func (s *Stack) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		best, bestLen := s.instances[0], 0
		for _, inst := range s.instances {
			for _, p := range inst.Prefixes() {
				if strings.HasPrefix(r.URL.Path, p) && len(p) > bestLen {
					best, bestLen = inst, len(p)
				}
			}
		}
		best.Handler().ServeHTTP(w, r)
	})
}

// Get serves GET path and validates the exchange against the OpenAPI document.
func (s *Stack) Get(t testing.TB, path string) *httptest.ResponseRecorder {
	t.Helper()
	return s.Validator.Serve(t, s.Handler(), httptest.NewRequest(http.MethodGet, path, nil))
}

// GetJSON GETs path, expects status and decodes the body into into (when not nil).
func (s *Stack) GetJSON(t testing.TB, path string, status int, into any) {
	t.Helper()
	rec := s.Get(t, path)
	if rec.Code != status {
		t.Fatalf("GET %s: status %d, want %d; body %s", path, rec.Code, status, rec.Body.String())
	}
	if into != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
			t.Fatalf("GET %s: decode: %v", path, err)
		}
	}
}

// InternalServer serves the internal port of the service called name (health, readiness, metrics and
// its export streams) over a real connection, so that chunked bodies, trailers and aborted answers
// behave as they do for the operator.
func (s *Stack) InternalServer(t testing.TB, name string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(s.Instance(t, name).InternalMux(s.Registry))
	t.Cleanup(srv.Close)
	return srv
}

// Produce writes msgs to the broker and returns once they are acknowledged.
func (s *Stack) Produce(t testing.TB, msgs ...events.Message) {
	t.Helper()
	w := s.Kafka.NewWriter("")
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := (kafka.Producer{W: w}).Write(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// Ingest produces msgs and waits until every service consuming their topics has stored every message
// on them so far (its stored offsets reach the topics' ends), so tests never sleep.
func (s *Stack) Ingest(t testing.TB, msgs ...events.Message) {
	t.Helper()
	s.Produce(t, msgs...)
	var topics []string
	for _, m := range msgs {
		if !slices.Contains(topics, m.Topic) {
			topics = append(topics, m.Topic)
		}
	}
	s.WaitConsumed(t, topics...)
}

// WaitConsumed waits until every service consuming topics has stored every message on them so far.
func (s *Stack) WaitConsumed(t testing.TB, topics ...string) {
	t.Helper()
	ends := map[string]map[int]int64{}
	for _, topic := range topics {
		ends[topic] = s.topicEnds(t, topic)
	}
	for _, inst := range s.instances {
		for _, topic := range topics {
			if !slices.Contains(inst.Consumes(), topic) {
				continue
			}
			Eventually(t, 30*time.Second, fmt.Sprintf("%s to consume %s", inst.Name(), topic), func() bool {
				stored := s.storedOffsets(t, inst, topic)
				for p, end := range ends[topic] {
					if off, ok := stored[p]; end > 0 && (!ok || off < end-1) {
						return false
					}
				}
				return true
			})
		}
	}
}

// topicEnds returns the next offset of every partition of topic.
func (s *Stack) topicEnds(t testing.TB, topic string) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := &kafkago.Client{Addr: kafkago.TCP(s.Kafka.Brokers...)}
	meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil || len(meta.Topics) != 1 || meta.Topics[0].Error != nil {
		t.Fatalf("metadata of %s: %v %+v", topic, err, meta)
	}
	var reqs []kafkago.OffsetRequest
	for _, p := range meta.Topics[0].Partitions {
		reqs = append(reqs, kafkago.LastOffsetOf(p.ID))
	}
	resp, err := client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		t.Fatalf("offsets of %s: %v", topic, err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offsets of %s/%d: %v", topic, p.Partition, p.Error)
		}
		out[p.Partition] = p.LastOffset
	}
	return out
}

// storedOffsets returns the offsets inst has stored for topic, by partition.
func (s *Stack) storedOffsets(t testing.TB, inst *kit.Instance, topic string) map[int]int64 {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(),
		`SELECT partition, "offset" FROM `+pgx.Identifier{inst.Schema(), "kafka_offsets"}.Sanitize()+
			` WHERE consumer_group = $1 AND topic = $2`, inst.Group(), topic)
	if err != nil {
		t.Fatalf("stored offsets of %s: %v", inst.Name(), err)
	}
	out := map[int]int64{}
	var p int
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &off}, func() error { out[p] = off; return nil }); err != nil {
		t.Fatalf("stored offsets of %s: %v", inst.Name(), err)
	}
	return out
}

// DLQReasons reads n messages of topic's dead-letter topic and returns the reasons they carry.
func (s *Stack) DLQReasons(t testing.TB, topic string, n int) []string {
	t.Helper()
	// A group per topic: a test may read several topics' dead letters, each from its start.
	r := s.Kafka.NewReader(t.Name()+"-dlq-"+topic, []string{ingest.DLQTopic(topic)})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []string
	for len(out) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("read the DLQ of %s: %v (got %q)", topic, err, out)
		}
		reason, _ := kafka.Header(m, ingest.HeaderDLQReason)
		out = append(out, reason)
	}
	return out
}

// Count is the number of rows of table ("schema.name").
func (s *Stack) Count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// Eventually polls cond until it holds, failing the test with what after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Env is an app.Env reading vars instead of the process environment.
func Env(vars map[string]string) *app.Env {
	return &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}}
}

// ReadAll reads a body for tests that hold a response.
func ReadAll(t testing.TB, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return b
}

// Metric is telemetry.Sum of name in g over the series whose labels include labels, failing the
// test when g cannot be gathered.
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, err := telemetry.Sum(g, name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
