package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/ws/wstest"
	"github.com/tidemark/tidemark/tools/devstack"
	"github.com/tidemark/tidemark/tools/monitoring"
)

// TestAgainstARunningMesh runs what `make run` runs, uses it as a client would (REST reads, a
// WebSocket subscriber, exports), and holds the dashboards and alerts to it:
//   - every query and alert names only series, labels and label values the mesh's /metrics exposes
//     (the operator's leader gauge, which the dev stack has no Kubernetes for, from its libraries);
//   - a real Prometheus scraping it loads the chart's rules as helm renders them, and every
//     dashboard query returns data, but those of panels that are quiet on a healthy mesh;
//   - no alert fires on the healthy mesh; then the failures the quiet panels show are made (messages
//     the consumers and the edge refuse, exports the source rejects), the quiet panels fill, and
//     the alerts of those failures fire. The 5xx ratio stays empty: nothing here makes a service fail.
func TestAgainstARunningMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres, a broker, the services, the simulator and Prometheus")
	}
	prometheus := tool(t, "prometheus")
	m := startMesh(t)

	ctx, cancel := context.WithCancel(context.Background())
	var traffic sync.WaitGroup
	defer func() { cancel(); traffic.Wait() }()
	traffic.Add(2)
	go func() { defer traffic.Done(); m.readREST(ctx) }()
	ws := wstest.Dial(t, "ws"+strings.TrimPrefix(m.base, "http")+"/ws")
	for _, sub := range []string{
		`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`,
		`{"type":"subscribe","channelType":"markets"}`, `{"type":"subscribe","channelType":"pricing"}`,
	} {
		ws.Send(sub)
	}
	go func() { // the subscriber reads what the edge sends, as a client that keeps up does
		defer traffic.Done()
		for ctx.Err() == nil {
			if _, err := ws.Read(time.Second); err != nil && !errors.Is(err, wstest.ErrQuiet) {
				return
			}
		}
	}()

	dir := t.TempDir()
	p := startPrometheus(t, prometheus, dir, m.internal, renderedRules(t, dir))
	p.alive = m.alive

	t.Run("healthy", func(t *testing.T) {
		// Two exports that finish a few scrapes apart: a counter's first sample is no increase, and the
		// durations' panel is the increase of their histogram.
		m.export(t, "trades", nil, v1alpha1.PhaseReady)
		p.seen(t, "tidemark_export_duration_seconds_count")
		m.export(t, "trades", nil, v1alpha1.PhaseReady)
		p.eachQuery(t, false, 2*time.Minute)
		p.rulesHealthy(t)
		if firing := p.alerts(t, "firing"); len(firing) > 0 {
			t.Errorf("alerts firing on a healthy mesh: %v", firing)
		}
	})

	t.Run("failures", func(t *testing.T) {
		nope := "NOPE-PERP"
		producer := wstest.NewProducer(t, m.kafka)
		channel := events.CandleChannel("ZZZ-PERP", "1")
		// Each failure twice, the second once Prometheus has the first: a counter's first sample is no
		// increase.
		for round := range 2 {
			m.export(t, "market-trades", &nope, v1alpha1.PhaseFailed)
			m.refuse(t, events.TopicFills)
			producer.Produce(events.TopicEdgeCandles, "update", wstest.KV{Key: "ZZZ-PERP", Value: "not a candle"})
			producer.SetSeq(channel, int64(100*round+10))
			producer.Produce(events.TopicEdgeCandles, "update", wstest.CandleChange("ZZZ-PERP", "1", time.Now().Unix(), 1, 1, true))
			producer.SetSeq(channel, int64(100*round+5)) // published again: a repeat
			producer.Produce(events.TopicEdgeCandles, "update", wstest.CandleChange("ZZZ-PERP", "1", time.Now().Unix(), 1, 1, false))
			if round == 0 {
				p.seen(t, "tidemark_export_failures_total", "tidemark_ingest_dlq_total", "ws_edge_rejected_total", "ws_edge_repeats_total")
			}
		}
		p.eachQuery(t, true, 2*time.Minute)
		for _, name := range []string{"TidemarkDLQGrowth", "TidemarkExportFailures"} {
			kittest.Eventually(t, time.Minute, name+" firing", func() bool { return slices.Contains(p.alerts(t, "firing"), name) })
		}
	})

	t.Run("metrics", func(t *testing.T) {
		// Every series exists now, those of the failures too.
		c := catalogue{}
		m.scrapeInto(t, c)
		operatorCatalogue(t, c)
		for _, d := range monitoring.Dashboards() {
			// Nothing here makes the indexer's failures (RPC errors, gaps, undecodable events), so its
			// panels that only they fill are left out.
			if err := c.checkDashboard(d, d.UID == monitoring.Indexer.UID); err != nil {
				t.Error(err)
			}
		}
		for _, a := range monitoring.Alerts() {
			if err := c.checkAlert(a); err != nil {
				t.Error(err)
			}
		}
	})
}

// mesh is the dev stack of a test.
type mesh struct {
	base, internal string // the edge router's URL, an internal port's (each serves the process' registry)
	kafka          kafka.Config
	exports        devstack.Exports
	authority      string
	user           v1alpha1.PublicKey
	gone           chan struct{} // closed when the dev stack stops
	err            error         // why it stopped, once gone is closed
}

// alive fails the test at once when the dev stack has stopped, rather than after the waits for
// what it would have done.
func (m *mesh) alive(t *testing.T) {
	t.Helper()
	select {
	case <-m.gone:
		t.Fatalf("the dev stack stopped: %v", m.err)
	default:
	}
}

var (
	internalRE = regexp.MustCompile(`internal: (http://[0-9.:]+)/metrics`)
	kafkaRE    = regexp.MustCompile(`kafka: +(\S+)`)
	exportRE   = regexp.MustCompile(`/authority/(\w+)/exports' -d '.*"userPublicKeys":\["(\w+)"\]`)
)

func startMesh(t *testing.T) *mesh {
	t.Helper()
	// PostgreSQL runs as the postgres user, who must be able to reach the data dir.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	stack := make(chan devstack.Exports, 1)
	done := make(chan error, 1)
	var banner syncBuffer
	go func() {
		done <- devstack.Run(ctx, devstack.Options{
			DataDir: dir, Addr: "127.0.0.1:0", BackfillDays: 1, LiveRate: 50, Progress: io.Discard, Out: &banner,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: ready, Exports: stack, Registry: telemetry.NewRegistry(),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("devstack stopped with: %v", err)
		}
	})
	m := &mesh{gone: make(chan struct{})}
	select {
	case m.base = <-ready:
	case err := <-done:
		done <- nil // for the cleanup's wait
		t.Fatalf("devstack failed to start: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatal("devstack did not start")
	}
	m.exports = <-stack
	go func() {
		m.err = <-done
		close(m.gone)
		done <- m.err // for the cleanup's wait
	}()
	b := banner.String()
	internal, brokers, export := internalRE.FindStringSubmatch(b), kafkaRE.FindStringSubmatch(b), exportRE.FindStringSubmatch(b)
	if internal == nil || brokers == nil || export == nil {
		t.Fatalf("the banner names no internal port, broker or export example:\n%s", b)
	}
	m.internal, m.authority, m.user = internal[1], export[1], v1alpha1.PublicKey(export[2])
	m.kafka = kafka.Config{Brokers: strings.Split(brokers[1], ","), ClientID: "monitoring-test"}
	return m
}

// readREST reads through the edge router until ctx ends: routes of every REST group, some answered
// 4xx, so that each has requests, codes and latencies by route.
func (m *mesh) readREST(ctx context.Context) {
	paths := []string{"/market/SOL-PERP/trades?limit=5", "/market/SOL-PERP/candles/60?limit=24", "/stats/markets",
		"/user/nobody/trades", "/authority/" + m.authority + "/accounts", "/amm/oraclePrice?marketName=SOL-PERP",
		"/notifications", "/market/NOPE-PERP/trades"}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.base+paths[i%len(paths)], nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
}

// export runs an export job of the last day to the phase want, in the dev stack's runner.
func (m *mesh) export(t *testing.T, fileType v1alpha1.FileType, market *string, want v1alpha1.Phase) {
	t.Helper()
	now := time.Now().Unix()
	job, err := m.exports.Jobs.Create(context.Background(), "", v1alpha1.ExportJobSpec{
		Authority: v1alpha1.PublicKey(m.authority), FileType: fileType, From: now - 86400, To: now,
		UserPublicKeys: []v1alpha1.PublicKey{m.user}, Market: market,
	})
	if err != nil {
		t.Fatalf("create an export of %s: %v", fileType, err)
	}
	kittest.Eventually(t, time.Minute, fmt.Sprintf("export %s %s", job.Name, want), func() bool {
		m.alive(t)
		jobs, err := m.exports.Jobs.List(context.Background(), m.authority)
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if j.Name == job.Name {
				return j.Status.Phase == want
			}
		}
		return false
	})
}

// refuse writes a message that does not decode to topic: its consumers send it to the DLQ.
func (m *mesh) refuse(t *testing.T, topic string) {
	t.Helper()
	w := m.kafka.NewWriter(topic)
	defer w.Close()
	if err := w.WriteMessages(context.Background(), kafkago.Message{Key: []byte("0"), Value: []byte("not a record")}); err != nil {
		t.Fatalf("write to %s: %v", topic, err)
	}
}

func (m *mesh) scrapeInto(t *testing.T, c catalogue) {
	t.Helper()
	resp, err := http.Get(m.internal + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := c.scrape(resp.Body); err != nil {
		t.Fatalf("%s/metrics: %v", m.internal, err)
	}
}

// prom is a Prometheus the test runs.
type prom struct {
	url string
	// alive fails the test when what Prometheus scrapes has stopped.
	alive func(*testing.T)
}

// scrapeInterval is the test Prometheus': short, for a short test, but long enough for a scrape
// of the whole mesh on a busy machine (its timeout is as long).
const scrapeInterval = "2s"

// startPrometheus runs Debian's prometheus scraping the mesh's internal port every scrapeInterval as the
// dev stack's banner says to, with the rule file rules.
func startPrometheus(t *testing.T, bin, dir, target, rules string) *prom {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	// The scrape the dev stack's banner prints, with the chart's rules.
	config := fmt.Sprintf("global: {evaluation_interval: 1s}\nrule_files: [%q]\n%s\n", rules, monitoring.ScrapeConfig(u.Host, scrapeInterval))
	cmd := exec.Command(bin, "--config.file="+writeFile(t, dir, "prometheus.yml", []byte(config)),
		"--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr, "--log.level=warn")
	kittest.StartDaemon(t, "prometheus", cmd)
	p := &prom{url: "http://" + addr, alive: func(*testing.T) {}}
	kittest.Eventually(t, time.Minute, "prometheus ready", func() bool {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// api GETs a Prometheus API path and decodes its data into v.
func (p *prom) api(path string, q url.Values, v any) error {
	resp, err := http.Get(p.url + path + "?" + q.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status != "success" {
		return fmt.Errorf("%s %s: %s", path, q.Encode(), body.Error)
	}
	return json.Unmarshal(body.Data, v)
}

// query is the values of expr's series now.
func (p *prom) query(expr string) ([]float64, error) {
	var data struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	}
	if err := p.api("/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	var out []float64
	for _, r := range data.Result {
		s, _ := r.Value[1].(string)
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// eachQuery waits until every dashboard query that must have data returns a series with a number:
// those of the panels quiet on a healthy mesh too when quietToo, but the 5xx ratio. The others must
// be valid queries.
func (p *prom) eachQuery(t *testing.T, quietToo bool, within time.Duration) {
	t.Helper()
	type pending struct{ what, expr string }
	var want []pending
	for _, d := range monitoring.Dashboards() {
		for _, r := range d.Rows {
			for _, panel := range r.Panels {
				for _, q := range panel.Queries {
					expr := monitoring.Expand(q.Expr, dashboardValue)
					// Nothing here makes a service answer 5xx or the indexer meet a faulty chain (the
					// indexer's failures are counted against one in tools/faults): those panels are
					// held to valid queries only.
					data := panel.Quiet == "" || (quietToo && !strings.Contains(panel.Title, "5xx") && d.UID != monitoring.Indexer.UID)
					if !data {
						if _, err := p.query(expr); err != nil {
							t.Errorf("%s / %s: %v", d.Title, panel.Title, err)
						}
						continue
					}
					want = append(want, pending{d.Title + " / " + panel.Title + " / " + q.Legend, expr})
				}
			}
		}
	}
	deadline := time.Now().Add(within)
	for len(want) > 0 {
		p.alive(t)
		var still []pending
		var errs []error
		for _, w := range want {
			vals, err := p.query(w.expr)
			if err != nil {
				t.Errorf("%s: %v", w.what, err)
				continue
			}
			if !slices.ContainsFunc(vals, func(v float64) bool { return !math.IsNaN(v) }) {
				still = append(still, w)
				errs = append(errs, fmt.Errorf("%s: %d series, none with a number: %s", w.what, len(vals), w.expr))
			}
		}
		want = still
		if len(want) > 0 && time.Now().After(deadline) {
			t.Fatalf("queries without data after %v:\n%v", within, errors.Join(errs...))
		}
		if len(want) > 0 {
			time.Sleep(2 * time.Second)
		}
	}
}

// seen waits until Prometheus has scraped a series of each name.
func (p *prom) seen(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		kittest.Eventually(t, time.Minute, "prometheus scraping "+name, func() bool {
			p.alive(t)
			v, err := p.query("count(" + name + ")")
			return err == nil && len(v) > 0
		})
	}
}

// rulesHealthy checks that Prometheus evaluates every rule of the chart without an error.
func (p *prom) rulesHealthy(t *testing.T) {
	t.Helper()
	var data struct {
		Groups []struct {
			Rules []struct {
				Name, Health, LastError string
			} `json:"rules"`
		} `json:"groups"`
	}
	kittest.Eventually(t, 30*time.Second, "rules evaluated", func() bool {
		if err := p.api("/api/v1/rules", url.Values{}, &data); err != nil || len(data.Groups) == 0 {
			return false
		}
		for _, r := range data.Groups[0].Rules {
			if r.Health == "unknown" {
				return false
			}
		}
		return true
	})
	n := 0
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s: %s %s", r.Name, r.Health, r.LastError)
			}
		}
	}
	if n != len(monitoring.Alerts()) {
		t.Errorf("prometheus loaded %d rules, the chart has %d alerts", n, len(monitoring.Alerts()))
	}
}

// alerts are the names of the alerts in state (pending, firing).
func (p *prom) alerts(t *testing.T, state string) []string {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.api("/api/v1/alerts", url.Values{}, &data); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range data.Alerts {
		if a.State == state && !slices.Contains(out, a.Labels["alertname"]) {
			out = append(out, a.Labels["alertname"])
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer the dev stack writes its banner to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
