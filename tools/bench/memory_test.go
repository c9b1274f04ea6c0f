package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/platform/testbed"
	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/loadgen"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

const (
	// memLimit is the chart's default memory limit of every deployable (defaults.resources.limits
	// .memory); app.TuneGC makes 90% of it the Go soft limit in the container.
	memLimit = 512 << 20
	// memHistory is the chain's history the indexer reads and the consumers ingest before the live
	// phase: the backfill of a deployment that starts behind, every consumer at full batches.
	memHistory = 24 * time.Hour
	// memLive is the live phase: the simulator's events through the chain, REST clients on every
	// service and memWSConns WebSocket clients on the edge.
	memLive = 2 * time.Minute
	// memWSConns is the chart's autoscaling target of connections per edge replica
	// (defaults.autoscaling.connections.averageValue).
	memWSConns = 5000
	// memRESTClients is the REST load's connections, spread over every service's routes.
	memRESTClients = 16
	// memIndexerPrefix is the topic prefix of the indexer's: the consumers read the history and the
	// live events from the simulator, whose records the indexer writes again from the chain.
	memIndexerPrefix = "indexed."
	// memWriters and memDefaultBatch are TIDEMARK_INGEST_WRITERS's and _BATCH_SIZE's defaults;
	// memSmallBatch is the consumers' twins' batch size.
	memWriters      = 2
	memDefaultBatch = 10000
	memSmallBatch   = 1000
	// memExportEvery is how often a wallet requests a CSV export in the live phase.
	memExportEvery = 3 * time.Second
)

// BenchmarkDeployableMemory runs every deployable as a process of its own, built
// from its main package as its image is, configured through the variables the chart sets, and
// under the soft limit the chart's default memory limit gives it in a container (GOMEMLIMIT at 90%
// of 512 MiB, as app.TuneGC sets it from the cgroup). The mesh is fed as a cluster's is: the indexer
// reads memHistory of simulated chain into the protocol topics and every consumer ingests it at full
// batches; then, for memLive, the simulator's live events flow through the chain, memRESTClients
// REST clients read every service's routes and memWSConns WebSocket clients hold candle, markets and
// pricing subscriptions on the edge. Each process's resident set is sampled every half second: the
// result is, per deployable, its resident memory once ready, its peak while ingesting the history,
// its median and peak while live, against the chart's limit; and the edge's memory per connection.
// The operator and the authority service work on a real Kubernetes API (the test bed's), and in
// the live phase wallets request CSV exports through the authority service, which the operator runs
// into MinIO.
func BenchmarkDeployableMemory(b *testing.B) {
	raiseFileLimit(b, memWSConns+4096)
	for range b.N {
		benchDeployableMemory(b)
	}
}

func benchDeployableMemory(b *testing.B) {
	ctx := context.Background()
	bins := buildDeployables(b)

	// The protocol's history, a day of the simulator's: in a chain, which the indexer reads into
	// topics of its own (TIDEMARK_KAFKA_TOPIC_PREFIX), and, once every consumer's idle memory is
	// read, straight into the protocol topics at once, so that the consumers ingest it as a
	// deployment that starts behind does, at full batches.
	broker := benchBroker(b)
	kc := kafka.Config{Brokers: broker.Brokers(), ClientID: "bench-memory"}
	specs := mesh.TopicSpecs(mesh.TopicPlan{Partitions: 3, ReplicationFactor: 1})
	for _, sp := range slices.Clone(specs) {
		sp.Name = memIndexerPrefix + sp.Name
		specs = append(specs, sp)
	}
	if _, err := kc.EnsureTopicSpecs(ctx, specs, false); err != nil {
		b.Fatal(err)
	}
	w := kc.NewWriter("")
	w.BatchSize = 10000
	w.BatchTimeout = 5 * time.Millisecond
	b.Cleanup(func() { w.Close() })
	direct := kafka.Producer{W: w}
	chain := simchain.New(simchain.Config{Seed: 5})
	cfg := sim.DefaultConfig()
	cfg.Seed = 5
	cfg.LiveMarketStateInterval = sim.SlotInterval
	s := sim.New(cfg)
	began := time.Now()
	from := time.Now().Add(-memHistory)
	var held heldMessages
	if err := s.Write(ctx, tee{chain.Writer(nil), &held}, from, time.Now()); err != nil {
		b.Fatalf("write the history: %v", err)
	}
	chain.Seal()
	st := chain.Stats()
	b.Logf("setup: %s of history, %d messages, %d events in %d blocks (%s)", memHistory, len(held), st.Events, st.Blocks,
		time.Since(began).Round(time.Millisecond))
	rpcSrv := httptest.NewServer(chain.Handler())
	b.Cleanup(rpcSrv.Close)

	// The tx service's chain: funded subaccounts and the lookup tables, as BenchmarkTxBuild has it.
	txChainState, txReads := txChain(b)
	txRPC := httptest.NewServer(txReads)
	b.Cleanup(txRPC.Close)
	var tables []string
	for _, k := range txChainState.LookupTables() {
		tables = append(tables, k.String())
	}
	txAcct := txFundedUser(b, txChainState).PDA.String()

	minio := miniotest.Start(b)
	s3 := minio.Config("bench-memory")
	if _, err := objstore.NewS3(ctx, s3); err != nil { // creates the bucket the operator writes
		b.Fatal(err)
	}
	kubeconfig := benchKubernetes(b)
	components, err := deploy.Mesh()
	if err != nil {
		b.Fatal(err)
	}
	pool := database(b, "bench_memory", true)
	pool.Close()

	procs := map[string]*memProc{}
	var indexer mesh.Deployable
	var indexerEnv []string
	start := func(d mesh.Deployable, env ...string) *memProc {
		p := startMemProc(b, d.Name, bins[d.Name], env...)
		procs[d.Name] = p
		return p
	}
	envOf := func(d mesh.Deployable, db string) []string {
		env := []string{"TIDEMARK_KAFKA_BROKERS=" + strings.Join(broker.Brokers(), ",")}
		switch d.Kind {
		case mesh.Service, mesh.Indexer:
			env = append(env, "TIDEMARK_PG_URL="+pgServer.URL(db), "TIDEMARK_PAGE_KEY="+string(benchPageKey))
		}
		switch d.Name {
		case "indexer":
			env = append(env, "TIDEMARK_INDEXER_RPC_URL="+rpcSrv.URL, fmt.Sprintf("TIDEMARK_INDEXER_START_SLOT=%d", sim.SlotAt(from)),
				"TIDEMARK_KAFKA_TOPIC_PREFIX="+memIndexerPrefix)
		case "authority":
			env = append(env, "TIDEMARK_S3_ENDPOINT="+s3.Endpoint, "TIDEMARK_S3_BUCKET="+s3.Bucket,
				"TIDEMARK_S3_ACCESS_KEY="+s3.AccessKey, "TIDEMARK_S3_SECRET_KEY="+s3.SecretKey,
				"KUBECONFIG="+kubeconfig, "TIDEMARK_NAMESPACE=default")
		case "tx":
			env = append(env, "TIDEMARK_TX_RPC_URL="+txRPC.URL, "TIDEMARK_TX_LOOKUP_TABLES="+strings.Join(tables, ","),
				"TIDEMARK_TX_COMPUTE_UNITS=200000")
		}
		return env
	}
	// Each consumer has a twin at a tenth of the batch size, on a database and a consumer group of
	// its own, ingesting the same history: the two working sets say what a batch's messages cost.
	twins := map[string]*memProc{}
	smallDB := database(b, "bench_memory_small", true)
	smallDB.Close()
	for _, d := range mesh.Deployables() {
		if d.Kind == mesh.Service && len(d.Consumes) > 0 {
			twins[d.Name] = startMemProc(b, d.Name+"@small", bins[d.Name], append(envOf(d, "bench_memory_small"),
				"TIDEMARK_KAFKA_GROUP_PREFIX=small-", fmt.Sprintf("TIDEMARK_INGEST_BATCH_SIZE=%d", memSmallBatch))...)
		}
	}
	for _, d := range mesh.Deployables() {
		env := envOf(d, "bench_memory")
		switch d.Kind {
		case mesh.Edge, mesh.Operator:
			continue // once the services it reads have their addresses
		case mesh.Indexer:
			indexer, indexerEnv = d, env // once every consumer's idle memory is read
			continue
		}
		start(d, env...)
	}
	var sources []string
	for _, c := range components {
		for _, ft := range c.Exports {
			sources = append(sources, ft+"="+procs[c.Name].internalURL())
		}
	}
	for _, d := range mesh.Deployables() {
		switch d.Kind {
		case mesh.Edge:
			start(d, "TIDEMARK_KAFKA_BROKERS="+strings.Join(broker.Brokers(), ","),
				"TIDEMARK_WS_MARKET_URL="+procs["market"].internalURL(), "TIDEMARK_WS_STATS_URL="+procs["stats"].internalURL(),
				"TIDEMARK_WS_NOTIFY_URL="+procs["notify"].internalURL())
		case mesh.Operator:
			start(d, "TIDEMARK_S3_ENDPOINT="+s3.Endpoint, "TIDEMARK_S3_BUCKET="+s3.Bucket,
				"TIDEMARK_S3_ACCESS_KEY="+s3.AccessKey, "TIDEMARK_S3_SECRET_KEY="+s3.SecretKey,
				"KUBECONFIG="+kubeconfig, "TIDEMARK_NAMESPACE=default", "TIDEMARK_EXPORT_SOURCES="+strings.Join(sources, ","))
		}
	}
	for name, p := range procs {
		path := "/readyz"
		if name == "operator" {
			path = "/healthz" // ready once it leads
		}
		p.waitAnswers(b, path, 2*time.Minute)
	}
	for _, p := range twins {
		p.waitAnswers(b, "/readyz", 2*time.Minute)
	}
	time.Sleep(2 * time.Second) // what starting allocated is collected
	ready := map[string]memSample{}
	for name, p := range procs {
		ready[name] = p.sample()
		p.sampleEvery(500 * time.Millisecond)
	}
	twinReady := map[string]memSample{}
	for name, p := range twins {
		twinReady[name] = p.sample()
		p.sampleEvery(500 * time.Millisecond)
	}
	b.Logf("every deployable ready and idle (%s)", time.Since(began).Round(time.Second))

	// The history: the indexer to the chain's tip and every consumer through all of it.
	ingestStart := time.Now()
	if err := direct.Write(ctx, held...); err != nil {
		b.Fatal(err)
	}
	p := start(indexer, indexerEnv...)
	p.waitAnswers(b, "/healthz", 2*time.Minute)
	ready[indexer.Name] = p.sample()
	p.sampleEvery(500 * time.Millisecond)
	consumers := map[*memProc]mesh.Deployable{}
	for _, d := range mesh.Deployables() {
		if twin := twins[d.Name]; twin != nil {
			consumers[procs[d.Name]], consumers[twin] = d, d
		}
	}
	waitIngested(b, p, consumers, held.count(), 15*time.Minute)
	ingestEnd := time.Now()
	batches := map[*memProc]batchSizes{}
	for c := range consumers {
		batches[c] = batchSizesOf(b, c)
	}
	b.Logf("history ingested in %s", ingestEnd.Sub(ingestStart).Round(time.Second))

	// Live: events, REST and WebSocket clients.
	liveCtx, stopLive := context.WithCancel(ctx)
	liveDone := make(chan error, 1)
	go func() { liveDone <- s.Live(liveCtx, tee{chain.Writer(nil), direct}, 0) }()
	wsBefore := procs["ws"].sample()
	symbols := make([]string, 0)
	for _, m := range sim.Markets() {
		symbols = append(symbols, m.Symbol)
	}
	clients := startLoadOf(b, procs["ws"].publicAddr, strings.Join(symbols, ","), memWSConns)
	wsAfter := procs["ws"].sample()
	liveStart := time.Now()
	exports := requestExports(liveCtx, procs["authority"].publicURL(), s.Accounts())
	rest := memRESTLoad(b, procs, s, txAcct)
	liveEnd := time.Now()
	clients.close()
	stopLive()
	if err := <-liveDone; err != nil {
		b.Errorf("live events: %v", err)
	}
	requested, exportErr := exports()
	if exportErr != nil {
		b.Fatal(exportErr)
	}
	b.Logf("live: REST %s; %d WebSocket frames delivered; %d exports requested, %d ready",
		rest, clients.total(), len(requested), readyExports(b, procs["authority"].publicURL(), requested))

	b.Logf("RESULT per deployable: resident memory (VmRSS) and Go live heap (what the last collection kept), "+
		"under GOMEMLIMIT %s as the chart's %s limit gives it:", mib(memLimit*9/10), mib(memLimit))
	b.Logf("RESULT   %-10s %15s %15s %15s %15s %9s %18s", "deployable", "ready rss/heap", "history peak", "live p50",
		"live peak", "VmHWM", "of limit (rss/heap)")
	var over []string
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		p := procs[name]
		hist := p.between(ingestStart, ingestEnd)
		live := p.between(liveStart, liveEnd)
		hwm := p.hwm()
		peakHeap := max(hist.peak().heap, live.peak().heap)
		b.Logf("RESULT   %-10s %15s %15s %15s %15s %9s %8.0f%% / %3.0f%%", name, ready[name], hist.peak(), live.median(),
			live.peak(), mib(hwm), 100*float64(hwm)/memLimit, 100*float64(peakHeap)/memLimit)
		b.ReportMetric(float64(hwm)/(1<<20), name+"-peak-MiB")
		b.ReportMetric(float64(peakHeap)/(1<<20), name+"-heap-MiB")
		if hwm > memLimit {
			over = append(over, name)
		}
	}
	// A consumer's working set while ingesting the history (a backlog) over its idle heap, at the
	// default batch size and at its twin's: the difference is what a batch's messages cost.
	for _, d := range mesh.Deployables() {
		twin := twins[d.Name]
		if twin == nil {
			continue
		}
		p := procs[d.Name]
		grew := p.between(ingestStart, ingestEnd).peak().heap - ready[d.Name].heap
		twinGrew := twin.between(ingestStart, ingestEnd).peak().heap - twinReady[d.Name].heap
		b.Logf("RESULT   %-10s ingest working set over the idle heap: %s at batch size %d (%s), %s at %d (%s), %d writers",
			d.Name, mib(grew), memDefaultBatch, batches[p], mib(twinGrew), memSmallBatch, batches[twin], memWriters)
	}
	// Resident memory counts the connections' goroutine stacks and socket buffers too, which the
	// live heap does not.
	perConn := float64(wsAfter.rss-wsBefore.rss) / memWSConns
	b.Logf("RESULT   the edge: %.1f KiB resident, %.1f KiB of live heap per connection (%d connections, subscriptions acknowledged: %s before, %s after)",
		perConn/1024, float64(wsAfter.heap-wsBefore.heap)/memWSConns/1024, memWSConns, wsBefore, wsAfter)
	b.ReportMetric(perConn/1024, "ws-KiB/conn")
	if len(over) > 0 {
		b.Errorf("over the chart's %s limit: %v", mib(memLimit), over)
	}
}

// heldMessages keeps what is written to it, to be written later.
type heldMessages []events.Message

func (h *heldMessages) Write(_ context.Context, msgs ...events.Message) error {
	*h = append(*h, msgs...)
	return nil
}

// count is the messages held by topic.
func (h heldMessages) count() map[string]int {
	out := map[string]int{}
	for _, m := range h {
		out[m.Topic]++
	}
	return out
}

// tee writes to both writers.
type tee [2]sim.Writer

func (t tee) Write(ctx context.Context, msgs ...events.Message) error {
	if err := t[0].Write(ctx, msgs...); err != nil {
		return err
	}
	return t[1].Write(ctx, msgs...)
}

// buildDeployables builds each deployable's main package, as its image's binary is built, into a
// folder of the benchmark's, and returns their paths by name.
func buildDeployables(b *testing.B) map[string]string {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	out := map[string]string{}
	args := []string{"build", "-trimpath", "-o", dir + "/"}
	for _, d := range mesh.Deployables() {
		args = append(args, d.Main)
		out[d.Name] = filepath.Join(dir, filepath.Base(d.Main))
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, msg)
	}
	return out
}

// memProc is one deployable's process and the samples of its resident set.
type memProc struct {
	name                 string
	cmd                  *exec.Cmd
	publicAddr, internal string
	log                  *kittest.Logs
	mu                   sync.Mutex
	samples              []memSample
	stopSampling         chan struct{}
	samplingDone, exited chan struct{}
	exitErr              error
	stopped              atomic.Bool
}

// memSample is a process's resident set and Go live heap at a time (heap 0: not read then).
type memSample struct {
	at        time.Time
	rss, heap int64
}

func (m memSample) String() string { return fmt.Sprintf("%s/%s", mib(m.rss), mib(m.heap)) }

type memSamples []memSample

// peak is the largest resident set and the largest live heap, each of its own sample.
func (ms memSamples) peak() memSample {
	var out memSample
	for _, m := range ms {
		out.rss, out.heap = max(out.rss, m.rss), max(out.heap, m.heap)
	}
	return out
}

// median is the median resident set and the median live heap of the samples that read one.
func (ms memSamples) median() memSample {
	var rss, heap []int64
	for _, m := range ms {
		rss = append(rss, m.rss)
		if m.heap > 0 {
			heap = append(heap, m.heap)
		}
	}
	return memSample{rss: medianOf64(rss), heap: medianOf64(heap)}
}

// startMemProc starts bin with env, on two free loopback ports, with the soft memory limit the
// chart's default limit gives it and nothing else of the benchmark's environment.
func startMemProc(b *testing.B, name, bin string, env ...string) *memProc {
	b.Helper()
	p := &memProc{name: name, publicAddr: freeAddr(b), internal: freeAddr(b), log: &kittest.Logs{},
		stopSampling: make(chan struct{}), samplingDone: make(chan struct{}), exited: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		fmt.Sprintf("GOMEMLIMIT=%d", memLimit*9/10),
		"TIDEMARK_PUBLIC_ADDR=" + p.publicAddr, "TIDEMARK_INTERNAL_ADDR=" + p.internal, "TIDEMARK_LOG_LEVEL=warn",
	}, env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		close(p.exited)
	}()
	b.Cleanup(func() {
		p.stopped.Store(true)
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	go func() {
		<-p.exited
		if !p.stopped.Load() {
			b.Errorf("%s exited: %v\n%s", name, p.exitErr, p.logs())
		}
	}()
	return p
}

func (p *memProc) internalURL() string { return "http://" + p.internal }
func (p *memProc) publicURL() string   { return "http://" + p.publicAddr }

func (p *memProc) logs() string {
	out := p.log.String()
	if len(out) > 4000 {
		out = out[len(out)-4000:]
	}
	return out
}

// waitAnswers waits until the internal port answers 200 on path.
func (p *memProc) waitAnswers(b *testing.B, path string, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(p.internalURL() + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.exited:
			b.Fatalf("%s exited before answering %s: %v\n%s", p.name, path, p.exitErr, p.logs())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: %s did not answer 200 within %s (%v)\n%s", p.name, path, timeout, err, p.logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// status reads a field of the process's /proc status, in bytes.
func (p *memProc) status(field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *memProc) rss() int64 { return p.status("VmRSS") }

// hwm is the process's peak resident set, as the kernel counts it: no sample can miss it.
func (p *memProc) hwm() int64 { return p.status("VmHWM") }

// sampleEvery samples the resident set every d and the live heap every fourth time, until the
// process exits.
func (p *memProc) sampleEvery(d time.Duration) {
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.exited:
				return
			case now := <-t.C:
				m := memSample{at: now, rss: p.rss()}
				if i%4 == 0 {
					m.heap = p.liveHeap()
				}
				if m.rss > 0 {
					p.mu.Lock()
					p.samples = append(p.samples, m)
					p.mu.Unlock()
				}
			}
		}
	}()
}

func (p *memProc) sample() memSample {
	return memSample{at: time.Now(), rss: p.rss(), heap: p.liveHeap()}
}

// liveHeap is the process's go_gc_heap_live_bytes, 0 when it cannot be read.
func (p *memProc) liveHeap() int64 {
	fams, err := p.metrics()
	if err != nil {
		return 0
	}
	live, _ := telemetry.Sum(gathered(fams), "go_gc_heap_live_bytes", nil)
	return int64(live)
}

// between is the samples taken in [from, to].
func (p *memProc) between(from, to time.Time) memSamples {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out memSamples
	for _, s := range p.samples {
		if !s.at.Before(from) && !s.at.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// metrics reads the process's metrics from its internal port.
func (p *memProc) metrics() ([]*dto.MetricFamily, error) {
	resp, err := http.Get(p.internalURL() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s metrics: %w", p.name, err)
	}
	return slices.Collect(maps.Values(fams)), nil
}

// waitIngested waits until the indexer is near the chain's tip and every consumer has consumed all
// that was written to each topic its deployable reads (written), as their metrics count.
func waitIngested(b *testing.B, indexer *memProc, consumers map[*memProc]mesh.Deployable, written map[string]int, most time.Duration) {
	b.Helper()
	deadline := time.Now().Add(most)
	for {
		fams, err := indexer.metrics()
		if err != nil {
			b.Fatal(err)
		}
		tip, _ := telemetry.Sum(gathered(fams), "tidemark_indexer_tip_slot", nil)
		lag, _ := telemetry.Sum(gathered(fams), "tidemark_indexer_slot_lag", nil)
		caught := tip > 0 && lag <= 150
		late := []string{fmt.Sprintf("indexer %.0f slots behind", lag)}
		for c, d := range consumers {
			fams, err := c.metrics()
			if err != nil {
				b.Fatal(err)
			}
			consumed, err := telemetry.SumBy(gathered(fams), "tidemark_ingest_messages_total", "topic", nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, topic := range d.Consumes {
				if n := written[topic]; consumed[topic] < float64(n) {
					caught = false
					late = append(late, fmt.Sprintf("%s %s %.0f of %d", c.name, topic, consumed[topic], n))
				}
			}
		}
		if caught {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the mesh did not ingest the history within %s: %v", most, late)
		}
		time.Sleep(time.Second)
	}
}

// batchSizes are the mean size of the batches p has committed and the bound of the histogram
// bucket its largest falls in.
type batchSizes struct{ mean, largest float64 }

func (bs batchSizes) String() string {
	return fmt.Sprintf("%.0f on average, the largest at most %.0f", bs.mean, bs.largest)
}

func batchSizesOf(b *testing.B, p *memProc) batchSizes {
	b.Helper()
	fams, err := p.metrics()
	if err != nil {
		b.Fatal(err)
	}
	var out batchSizes
	for _, f := range fams {
		if f.GetName() != "tidemark_ingest_batch_size" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			out.mean = h.GetSampleSum() / float64(h.GetSampleCount())
			out.largest = math.Inf(1)
			for _, bk := range h.GetBucket() {
				if bk.GetCumulativeCount() == h.GetSampleCount() {
					out.largest = bk.GetUpperBound()
					break
				}
			}
		}
	}
	if out.mean == 0 {
		b.Fatalf("%s committed no batch", p.name)
	}
	return out
}

// gathered is a process's metric families as a gatherer.
type gathered []*dto.MetricFamily

func (g gathered) Gather() ([]*dto.MetricFamily, error) { return g, nil }

// memRESTLoad reads every service's routes for memLive from memRESTClients connections, round robin
// over the routes, and posts limit orders to the tx service, failing on any answer but a 2xx.
func memRESTLoad(b *testing.B, procs map[string]*memProc, s *sim.Simulator, txAcct string) loadgen.Result {
	b.Helper()
	accts := s.Accounts()
	day := time.Now().UTC().Add(-12 * time.Hour)
	date := day.Format("2006/01/02")
	routes := []func(n int) string{
		func(n int) string {
			return procs["market"].publicURL() + "/market/SOL-PERP/candles/1?limit=1000"
		},
		func(n int) string { return procs["market"].publicURL() + "/market/SOL-PERP/trades/" + date },
		func(n int) string { return procs["market"].publicURL() + "/market/SOL-PERP/fundingRates" },
		func(n int) string { return procs["user"].publicURL() + "/user/" + accts[n%len(accts)].User + "/trades" },
		func(n int) string {
			return procs["user"].publicURL() + "/user/" + accts[n%len(accts)].User + "/orders/perp"
		},
		func(n int) string {
			return procs["user"].publicURL() + "/user/" + accts[n%len(accts)].User + "/deposits"
		},
		func(n int) string {
			return procs["authority"].publicURL() + "/authority/" + accts[n%len(accts)].Authority + "/snapshots/overview?days=30"
		},
		func(n int) string {
			return procs["authority"].publicURL() + "/authority/" + accts[n%len(accts)].Authority + "/accounts"
		},
		func(n int) string {
			now := time.Now().Unix()
			return fmt.Sprintf("%s/amm/oraclePrice?marketName=SOL-PERP&start=%d&end=%d", procs["amm"].publicURL(), now-3600, now)
		},
		func(n int) string { return procs["stats"].publicURL() + "/stats/markets" },
		func(n int) string { return procs["stats"].publicURL() + "/stats/leaderboard" },
		func(n int) string { return procs["stats"].publicURL() + "/stats/liquidations" },
	}
	var first atomic.Value
	check := func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode/100 != 2 {
			err = fmt.Errorf("%s: %d %s", resp.Request.URL, resp.StatusCode, body)
		}
		if err != nil {
			first.CompareAndSwap(nil, err.Error())
		}
		return err
	}
	var wg sync.WaitGroup
	var txRes loadgen.Result
	var txErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		txRes, txErr = loadgen.Run(context.Background(), loadgen.Config{
			Concurrency: 2, Duration: memLive, URL: func(int) string { return procs["tx"].publicURL() + "/tx/order/place" },
			Body:  func(n int) []byte { return txOrder(txAcct, int64(n)) },
			Check: check,
		})
	}()
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		Concurrency: memRESTClients, Duration: memLive,
		URL:   func(n int) string { return routes[n%len(routes)](n / len(routes)) },
		Check: check,
	})
	wg.Wait()
	if err == nil {
		err = txErr
	}
	if err != nil {
		b.Fatalf("REST load: %v", err)
	}
	if res.Errors > 0 || txRes.Errors > 0 {
		b.Fatalf("REST load: %d and %d (tx) answers were not a 2xx, first: %v", res.Errors, txRes.Errors, first.Load())
	}
	if txRes.Requests == 0 {
		b.Fatal("no /tx/order/place request completed")
	}
	return res
}

// requestExports has a wallet request a CSV export of one of its accounts' trades of the last day
// through the authority service every memExportEvery until ctx ends; the returned function waits for
// that and returns the wallets that requested one, or the first request that was not a 200.
func requestExports(ctx context.Context, base string, accts []sim.Account) func() ([]string, error) {
	var requested []string
	var failed error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(memExportEvery)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			a := accts[(i*7)%len(accts)]
			now := time.Now().Unix()
			body := fmt.Sprintf(`{"fileType":"trades","userPublicKeys":[%q],"from":%d,"to":%d}`, a.User, now-86400, now)
			resp, err := http.Post(base+"/authority/"+a.Authority+"/exports", "application/json", strings.NewReader(body))
			if err != nil {
				failed = err
				return
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				failed = fmt.Errorf("POST /authority/%s/exports %s: %d %s", a.Authority, body, resp.StatusCode, answer)
				return
			}
			requested = append(requested, a.Authority)
		}
	}()
	return func() ([]string, error) {
		<-done
		return requested, failed
	}
}

// readyExports counts the ready jobs of the wallets, waiting up to a minute for the last ones.
func readyExports(b *testing.B, base string, authorities []string) int {
	b.Helper()
	count := func() (ready, all int) {
		for _, a := range slices.Compact(slices.Sorted(slices.Values(authorities))) {
			var page struct {
				Records []struct {
					Status string `json:"status"`
				} `json:"records"`
			}
			if err := json.Unmarshal(fetch(b, base+"/authority/"+a+"/exports"), &page); err != nil {
				b.Fatal(err)
			}
			for _, r := range page.Records {
				all++
				if r.Status == "ready" {
					ready++
				}
			}
		}
		return ready, all
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ready, all := count()
		if ready == all || time.Now().After(deadline) {
			return ready
		}
		time.Sleep(time.Second)
	}
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func medianOf64(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchKubernetes starts the test bed's kube-apiserver and etcd with the ExportJob CRD until the
// benchmark ends, and returns the path of an administrator's kubeconfig.
func benchKubernetes(b *testing.B) string {
	b.Helper()
	bin, err := testbed.Dir()
	if err != nil {
		b.Fatal(err)
	}
	ctrllog.SetLogger(logr.Discard()) // the API server's client logs nothing here
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "operator", "config", "crd")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin,
	}
	if _, err := env.Start(); err != nil {
		b.Fatalf("start the test bed's API server (make testbed): %v", err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	admin, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := admin.KubeConfig()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}
