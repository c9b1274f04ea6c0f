package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kafka/kafkatest"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	authorityapi "github.com/tidemark/tidemark/services/authority"
	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/images"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// TestWiringRunsForReal runs the chart's wiring: each Deployment's container is started from the
// binary of its image (built as make images builds it) with exactly the rendered entrypoint,
// arguments and environment, its Secrets resolved from the rendered Secrets and the addresses in the
// values pointing at this test's PostgreSQL, broker and MinIO; a Service name in a URL resolves, like
// cluster DNS, through the rendered Service's selector and target port to the process behind it. The
// operator and the authority service run as their rendered ServiceAccounts, with their rendered
// Roles: each has a token of its account where a pod would have it mounted. Each answers 200 on its
// readiness probe, and the operator runs an ExportJob of the market's rows into the bucket,
// requested from the authority service's API. The tx service builds a deposit for a user of the
// simulated chain, read through the same endpoint and API key as the indexer's.
func TestWiringRunsForReal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := repoRoot(t)
	c := newCluster(t)
	ns := "wiring"
	c.namespace(t, ns)

	// Kafka as production runs it: TLS with the cluster's own CA, client certificates, a SCRAM user,
	// no topic created on first use. The platform team's Secrets hold the CA, the client's certificate
	// and the user; the release's topics carry its prefix.
	// Each deployable has a user of its own, granted only the ACLs the chart's README lists for it;
	// the release's user (the topics hook's, this test's) is the cluster's superuser.
	naming := kafka.Naming{TopicPrefix: "wiring.", GroupPrefix: "wiring-"}
	external := map[string]map[string][]byte{}
	var users []kafka.EmbeddedUser
	for _, d := range mesh.Deployables() {
		u := kafka.EmbeddedUser{Mechanism: kafka.SASLScramSHA512, Name: "tidemark-" + d.Name, Password: "secret-of-" + d.Name}
		for _, a := range d.ACLs() {
			u.ACLs = append(u.ACLs, naming.Grant(a))
		}
		if len(u.ACLs) == 0 {
			continue // reads no Kafka
		}
		users = append(users, u)
		external["kafka-user-"+d.Name] = map[string][]byte{"username": []byte(u.Name), "password": []byte(u.Password)}
	}
	broker := kafkatest.Start(t, kafkatest.Options{ClientCerts: true, Mechanism: kafka.SASLScramSHA512,
		User: "tidemark", Password: "wiring-secret", NoAutoCreate: true, Users: users, EnforceACLs: true})
	external["kafka-tls"] = map[string][]byte{"ca.crt": readFile(t, broker.Security.CAFile),
		"tls.crt": readFile(t, broker.Security.CertFile), "tls.key": readFile(t, broker.Security.KeyFile)}
	external["kafka-user"] = map[string][]byte{"username": []byte(broker.Security.Username), "password": []byte(broker.Security.Password)}
	// The chain the indexer and the tx service read: ten minutes of the simulator's history in
	// blocks, its users' accounts and its lookup tables, served over JSON-RPC on loopback, from an
	// endpoint that wants its API key header.
	chain := simchain.New(simchain.Config{})
	from := time.Now().Add(-20 * time.Minute).Truncate(time.Minute)
	var history []events.Message
	if err := sim.New(sim.Config{Authorities: 20, FillsPerMinute: 60}).Generate(from, from.Add(10*time.Minute), func(m events.Message) error {
		if m.Topic != events.TopicFundingRates { // the funding rates below are counted exactly
			history = append(history, m)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := chain.Writer(nil).Write(ctx, history...); err != nil {
		t.Fatal(err)
	}
	chain.Seal()
	rpcSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("x-api-key") != "wiring-key" {
			http.Error(rw, "no API key", http.StatusUnauthorized)
			return
		}
		chain.Handler().ServeHTTP(rw, r)
	}))
	defer rpcSrv.Close()
	const bucket = "wiring-exports"
	if _, err := objstore.NewS3(ctx, minioSrv.Config(bucket)); err != nil {
		t.Fatal(err)
	}

	comps, err := deploy.Mesh()
	if err != nil {
		t.Fatal(err)
	}
	var targets []images.Target
	for _, d := range deploy.Deployables() {
		targets = append(targets, images.Target{Name: d.Name, Main: d.Main, Summary: d.Summary})
	}
	built, err := images.Build(ctx, images.Options{Root: root, Out: t.TempDir(), Version: "wiring", Revision: "test"}, targets)
	if err != nil {
		t.Fatal(err)
	}
	layouts := map[string]string{}
	for _, b := range built {
		layouts[b.Ref] = b.Dir
	}

	// The values: the addresses of this test's servers, and a free port for each listener.
	values := map[string]any{
		"global": map[string]any{
			"image":    map[string]any{"tag": "wiring"},
			"logLevel": "warn",
			"kafka": map[string]any{"brokers": broker.Brokers(), "topicPrefix": naming.TopicPrefix, "groupPrefix": naming.GroupPrefix,
				"tls":  map[string]any{"enabled": true, "existingSecret": "kafka-tls", "clientCertificate": true},
				"sasl": map[string]any{"mechanism": kafka.SASLScramSHA512, "existingSecret": "kafka-user"}},
			"postgres": map[string]any{"url": pgtest.NewDB(t, pgSrv)},
			"s3": map[string]any{"endpoint": minioSrv.Endpoint, "bucket": bucket, "tls": false,
				"accessKey": minioSrv.AccessKey, "secretKey": minioSrv.SecretKey},
		},
		"topics": map[string]any{"create": true, "partitions": 3, "replicationFactor": 1, "strict": true},
		"tests":  map[string]any{"timeout": "20s"},
		// The CRD goes with the release, so its uninstall drains the export jobs first.
		"crds": map[string]any{"keep": false},
	}
	free := freePorts(t, 2*len(comps))
	for i, cp := range comps {
		ports := map[string]any{"internal": free[2*i]}
		if cp.Service != nil || len(cp.Prefixes) > 0 {
			ports["public"] = free[2*i+1]
		}
		values[cp.Name] = map[string]any{"ports": ports, "kafkaUser": map[string]any{"existingSecret": "kafka-user-" + cp.Name}}
	}
	// The platform team's Secret with the endpoint and its key, and where the history begins.
	external["solana-rpc"] = map[string][]byte{"endpoint": []byte(rpcSrv.URL), "headers": []byte("x-api-key: wiring-key")}
	indexer := values["indexer"].(map[string]any)
	indexer["rpc"] = map[string]any{"existingSecret": "solana-rpc", "urlKey": "endpoint"}
	indexer["config"] = map[string]any{"INDEXER_START_SLOT": sim.SlotAt(from)}
	var tables []string
	for _, k := range chain.LookupTables() {
		tables = append(tables, k.String())
	}
	tx := values["tx"].(map[string]any)
	tx["rpc"] = map[string]any{"existingSecret": "solana-rpc", "urlKey": "endpoint"}
	tx["config"] = map[string]any{"TX_LOOKUP_TABLES": strings.Join(tables, ",")}
	valuesFile := filepath.Join(t.TempDir(), "values.yaml")
	b, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(valuesFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	objs := objects(t, render(t, "--namespace", ns, "-f", valuesFile))

	// What a cluster has before the pods start: the CRD, and the operator's account and Role.
	c.installCRDs(t, objs)
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding":
			c.apply(t, o)
		}
	}

	w := &wiring{t: t, ctx: ctx, ns: ns, objs: objs, external: external, layouts: layouts, dir: t.TempDir(), procs: map[string]*process{}}
	// The topics, declared by the chart's topics hook, before anything starts (as Helm runs it).
	if out, err := w.job("tidemark-topics"); err != nil || !strings.Contains(out, "created   wiring.protocol.fills\n") {
		t.Fatalf("the topics hook: %v\n%s", err, out)
	}
	for _, cp := range comps {
		w.start(cp.Name)
	}
	for _, cp := range comps {
		w.waitReady(cp.Name)
	}
	// helm test: the rendered test pod reaches every deployable's readiness and every service's
	// document through their Services.
	probe, err := w.pod("tidemark-test")
	if err != nil || strings.Count(probe, "ok    http://127.0.0.1:") != len(comps)+len(mesh.Of(mesh.Service)) {
		t.Fatalf("helm test: %v\n%s", err, probe)
	}
	t.Logf("helm test:\n%s", probe)

	// The chain's fills, through the indexer (TLS, its own SASL user and ACLs, the release's topic
	// prefix) into the market service, read back through the market's public port.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, body := get(w.procs["market"].url("http") + "/market/SOL-PERP/trades?limit=5")
		if code == 200 && strings.Contains(body, `"txSig"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the market serves no fill of the chain: %d %s\nindexer:\n%s\nmarket:\n%s", code, body,
				w.procs["indexer"].logs(), w.procs["market"].logs())
		}
	}

	// A deposit for a user of the chain, built by the tx service from the accounts it reads through
	// the Secret's endpoint with its API key header (an endpoint it could not read would keep it
	// not ready, or answer an error here).
	chainUsers := chain.Users()
	if len(chainUsers) == 0 {
		t.Fatal("the simulated chain has no users")
	}
	deposit := fmt.Sprintf(`{"accountId":%q,"amount":"10","symbol":"USDC","simulate":false}`, chainUsers[0].Address)
	resp, err := http.Post(w.procs["tx"].url("http")+"/tx/deposit", "application/json", strings.NewReader(deposit))
	if err != nil {
		t.Fatal(err)
	}
	var txBuilt struct {
		Success bool   `json:"success"`
		Tx      string `json:"tx"`
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &txBuilt) != nil || !txBuilt.Success || txBuilt.Tx == "" {
		t.Fatalf("POST /tx/deposit for %s: %s %s\n%s", chainUsers[0].Address, resp.Status, b, w.procs["tx"].logs())
	}

	// A day of SOL-PERP funding rates through the broker, read back through the market's public port.
	now := time.Now().Unix()
	var recs []events.Record
	for i := range 24 {
		recs = append(recs, kittest.FundingRate(kittest.SOLPerp, now-int64(24-i)*3600, i+1))
	}
	kc := broker.Config(t, "wiring-test", broker.Security)
	kc.Naming = naming
	kw := kc.NewWriter("")
	defer kw.Close()
	if err := (kafka.Producer{W: kw, Naming: naming}).Write(ctx, kittest.Encode(t, events.TopicFundingRates, recs...)...); err != nil {
		t.Fatal(err)
	}
	market := w.procs["market"]
	kittest.Eventually(t, 60*time.Second, "the market to serve the funding rates", func() bool {
		var page struct {
			Records []json.RawMessage `json:"records"`
		}
		code, body := get(market.url("http") + "/market/SOL-PERP/fundingRates?limit=100")
		return code == 200 && json.Unmarshal([]byte(body), &page) == nil && len(page.Records) == len(recs)
	})

	// Least privilege holds: the market's user, which read its topics above, is refused a topic it
	// does not read and a write to one it only reads.
	marketSec := broker.Security
	marketSec.Username, marketSec.Password = "tidemark-market", "secret-of-market"
	mkc := broker.Config(t, "wiring-market-user", marketSec)
	mkc.Naming = naming
	// The broker hides a topic a user may not describe: the release's user sees it, the market's not.
	if _, err := kc.EndOffsets(ctx, events.TopicOrders); err != nil {
		t.Errorf("the release's user describing protocol.orders: %v", err)
	}
	if _, err := mkc.EndOffsets(ctx, events.TopicOrders); err == nil {
		t.Error("the market's user may describe protocol.orders, which it does not read")
	}
	mw := mkc.NewWriter("")
	mw.MaxAttempts = 1
	err = (kafka.Producer{W: mw, Naming: naming}).Write(ctx, kittest.Encode(t, events.TopicFundingRates, recs[0])...)
	mw.Close()
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("the market's user writing protocol.funding-rates, which it only reads: %v", err)
	}

	// The export, requested from the authority service's API: it creates the ExportJob through the
	// Kubernetes API as its rendered ServiceAccount, and the operator runs it from the market's
	// internal port into the bucket. The wallet's account is known from protocol.new-users.
	wallet, account := kittest.Key(2), kittest.Key(3)
	newUser := &events.NewUser{Tx: events.Tx{Ts: now - 86400, TxSig: kittest.Sig("wiring", 1), Slot: 1_000}, UserAuthority: wallet,
		User: account, Name: "Main Account"}
	if err := (kafka.Producer{W: kw, Naming: naming}).Write(ctx, kittest.Encode(t, events.TopicNewUsers, newUser)...); err != nil {
		t.Fatal(err)
	}
	authority := w.procs["authority"]
	kittest.Eventually(t, 60*time.Second, "the authority service to know the wallet's account", func() bool {
		code, body := get(authority.url("http") + "/authority/" + wallet + "/accounts")
		return code == 200 && strings.Contains(body, account)
	})
	req := fmt.Sprintf(`{"fileType":"funding-rates","from":%d,"to":%d,"userPublicKeys":[%q],"market":"SOL-PERP"}`, now-2*86400, now, account)
	resp, err = http.Post(authority.url("http")+"/authority/"+wallet+"/exports", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		Success   bool   `json:"success"`
		RequestID string `json:"requestId"`
		Status    string `json:"status"`
	}
	err = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !created.Success || created.RequestID == "" {
		t.Fatalf("POST exports: %d %+v %v\n%s", resp.StatusCode, created, err, authority.logs())
	}
	k8s, err := client.New(kube, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.ExportJob
	kittest.Eventually(t, 60*time.Second, "the export to be Ready", func() bool {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.RequestID}, &got); err != nil {
			return false
		}
		if got.Status.Phase == v1alpha1.PhaseFailed {
			t.Fatalf("export failed: %+v\n%s", got.Status, w.procs["operator"].logs())
		}
		return got.Status.Phase == v1alpha1.PhaseReady
	})
	if got.Status.RecordCount != int64(len(recs)) || got.Status.ObjectKey == "" {
		t.Errorf("export status %+v, want %d records in an object", got.Status, len(recs))
	}
	store, err := objstore.NewS3(ctx, minioSrv.Config(bucket))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, got.Status.ObjectKey); err != nil {
		t.Errorf("the bucket has no %s: %v", got.Status.ObjectKey, err)
	}
	// The API lists it ready, with a download URL that serves the file.
	var list struct {
		Records []authorityapi.Record `json:"records"`
	}
	code, body := get(authority.url("http") + "/authority/" + wallet + "/exports")
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Records) != 1 {
		t.Fatalf("GET exports: %d %v %s", code, err, body)
	}
	r := list.Records[0]
	if r.RequestID != created.RequestID || r.Status != "ready" || r.RecordCount == nil || *r.RecordCount != int64(len(recs)) || r.DownloadURL == nil {
		t.Fatalf("the listed export: %s", body)
	}
	if code, file := get(*r.DownloadURL); code != 200 || strings.Count(file, "\n") != len(recs)+1 {
		t.Errorf("download: %d, %d lines", code, strings.Count(file, "\n"))
	}
	// What a platform team sees of the same job with kubectl, with the authority service's own
	// rights: the CRD's printer columns, the job named by the requestId, Ready.
	kubectl := exec.CommandContext(ctx, testbedBin(t, "kubectl"), "--kubeconfig", authority.kubeconfig, "get", "exportjobs", "-o", "wide")
	out, err := kubectl.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get exportjobs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), created.RequestID) || !strings.Contains(string(out), "Ready") {
		t.Errorf("kubectl get exportjobs does not show %s Ready:\n%s", created.RequestID, out)
	}
	t.Logf("kubectl get exportjobs -o wide (as the authority service's ServiceAccount):\n%s", out)
	t.Logf("GET /authority/%s/exports:\n%s", wallet, body)

	// helm uninstall: before anything goes, the pre-delete hook drains the namespace's export jobs,
	// which the running operator finalizes, so that no job's finalizer holds the CRD in Terminating
	// and no file stays.
	drained, err := w.job("tidemark-operator-drain")
	if err != nil || !strings.Contains(drained, "1 export jobs, 1 finalized by the operator") {
		t.Fatalf("the drain hook: %v\n%s", err, drained)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: created.RequestID}, &got); !apierrors.IsNotFound(err) {
		t.Errorf("after the drain, the export job: %v %+v", err, got.ObjectMeta)
	}
	if _, err := store.Stat(ctx, got.Status.ObjectKey); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("after the drain, its file: %v", err)
	}
	// Each stops cleanly on SIGTERM, well within its terminationGracePeriodSeconds.
	for _, cp := range comps {
		w.stop(cp.Name)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// freePorts are n distinct free ports, all held until each is found.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	for range n {
		ln, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	return out
}

func get(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wiring runs the rendered Deployments as local processes.
type wiring struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	objs []*unstructured.Unstructured
	// external are the Secrets the platform team made before the install, by name.
	external map[string]map[string][]byte
	layouts  map[string]string // image ref -> its OCI layout
	dir      string
	procs    map[string]*process
}

type process struct {
	cmd       *exec.Cmd
	container corev1.Container
	done      chan error
	mu        sync.Mutex
	out       strings.Builder
	grace     time.Duration
	// kubeconfig is where its ServiceAccount's token is, for a pod that has one mounted.
	kubeconfig string
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *process) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// url is the loopback base URL of the container port named name.
func (p *process) url(name string) string {
	for _, cp := range p.container.Ports {
		if cp.Name == name {
			return fmt.Sprintf("http://127.0.0.1:%d", cp.ContainerPort)
		}
	}
	return "http://no-port-named-" + name
}

// prepared is a deployable's container made ready to run: its binary extracted from its image, its
// command line and environment as the kubelet would give them.
type prepared struct {
	spec corev1.PodSpec
	ctr  corev1.Container
	bin  string
	argv []string
	env  []string
}

func (w *wiring) prepare(component string) prepared {
	w.t.Helper()
	return w.preparePod(component, deployment(w.t, w.objs, component).Spec.Template.Spec)
}

// preparePod makes the one container of a rendered pod spec ready to run, under name.
func (w *wiring) preparePod(component string, spec corev1.PodSpec) prepared {
	t := w.t
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%s has %d containers", component, len(spec.Containers))
	}
	ctr := spec.Containers[0]
	layout, ok := w.layouts[ctr.Image]
	if !ok {
		t.Fatalf("%s runs image %s, which make images does not build", component, ctr.Image)
	}
	img, err := images.Load(layout, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// A container's command replaces the image's entrypoint and its args the image's cmd.
	argv := append(append([]string{}, cfg.Config.Entrypoint...), cfg.Config.Cmd...)
	if len(ctr.Command) > 0 {
		argv = append(append([]string{}, ctr.Command...), cfg.Config.Cmd...)
	}
	if len(ctr.Args) > 0 {
		argv = append(argv[:len(argv)-len(cfg.Config.Cmd)], ctr.Args...)
	}
	bin := filepath.Join(w.dir, component)
	if err := images.ExtractFile(img, argv[0], bin); err != nil {
		t.Fatal(err)
	}
	return prepared{spec: spec, ctr: ctr, bin: bin, argv: argv, env: w.environment(component, spec, ctr)}
}

// job runs the rendered Job's container to the end, as the kubelet would: its image's binary, its
// args, its environment and mounted Secrets.
func (w *wiring) job(name string) (string, error) {
	w.t.Helper()
	o := find(w.objs, "Job", name)
	if o == nil {
		w.t.Fatalf("no rendered Job %s", name)
	}
	c := w.preparePod(name, typed[batchv1.Job](w.t, o).Spec.Template.Spec)
	cmd := exec.CommandContext(w.ctx, c.bin, c.argv[1:]...)
	cmd.Env = c.env
	if a := c.spec.AutomountServiceAccountToken; a != nil && *a {
		cmd.Env = append(cmd.Env, "KUBECONFIG="+w.kubeconfigFor(c.spec.ServiceAccountName))
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// pod runs the rendered Pod's container to the end, its arguments' Service addresses resolved as
// cluster DNS would.
func (w *wiring) pod(name string) (string, error) {
	w.t.Helper()
	o := find(w.objs, "Pod", name)
	if o == nil {
		w.t.Fatalf("no rendered Pod %s", name)
	}
	c := w.preparePod(name, typed[corev1.Pod](w.t, o).Spec)
	args := make([]string, len(c.argv)-1)
	for i, a := range c.argv[1:] {
		args[i] = w.resolveServices(a)
	}
	cmd := exec.CommandContext(w.ctx, c.bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *wiring) start(component string) {
	t := w.t
	t.Helper()
	c := w.prepare(component)
	spec, ctr, bin, argv, env := c.spec, c.ctr, c.bin, c.argv, c.env
	p := &process{container: ctr, done: make(chan error, 1), grace: time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second}
	if spec.AutomountServiceAccountToken != nil && *spec.AutomountServiceAccountToken {
		// Where a pod has its account's token mounted, the process has a kubeconfig with it.
		p.kubeconfig = w.kubeconfigFor(spec.ServiceAccountName)
		env = append(env, "KUBECONFIG="+p.kubeconfig)
	}
	p.cmd = exec.Command(bin, argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	w.procs[component] = p
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// waitReady polls the container's readiness probe, as the kubelet would.
func (w *wiring) waitReady(component string) {
	t := w.t
	t.Helper()
	p := w.procs[component]
	probe := p.container.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		t.Fatalf("%s has no HTTP readiness probe", component)
	}
	url := p.url(probe.HTTPGet.Port.String()) + probe.HTTPGet.Path
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := get(url)
		if code == 200 {
			return
		}
		select {
		case err := <-p.done:
			t.Fatalf("%s exited (%v) before it was ready:\n%s", component, err, p.logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s answers %d %s\n%s", component, url, code, body, p.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *wiring) stop(component string) {
	t := w.t
	t.Helper()
	p := w.procs[component]
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%s stopped with %v:\n%s", component, err, p.logs())
		}
	case <-time.After(p.grace):
		t.Errorf("%s did not stop within its grace period of %s", component, p.grace)
	}
}

// environment is the container's environment as the kubelet makes it: values, Secret and ConfigMap
// keys from the rendered objects (or the platform team's Secrets), the pod's namespace; then the
// addresses of rendered Services, and the paths of mounted Secrets where this test wrote their files.
func (w *wiring) environment(component string, spec corev1.PodSpec, ctr corev1.Container) []string {
	t := w.t
	t.Helper()
	mounts := w.mountSecrets(component, spec, ctr)
	var env []string
	for _, from := range ctr.EnvFrom {
		t.Fatalf("%s: envFrom %+v is not resolved by this test", component, from)
	}
	for _, e := range ctr.Env {
		v := e.Value
		if s := e.ValueFrom; s != nil {
			switch {
			case s.SecretKeyRef != nil && s.SecretKeyRef.Optional != nil && *s.SecretKeyRef.Optional &&
				!w.hasSecretKey(s.SecretKeyRef.Name, s.SecretKeyRef.Key):
				continue // the kubelet leaves an optional key that is not there unset
			case s.SecretKeyRef != nil:
				v = w.secretKey(s.SecretKeyRef.Name, s.SecretKeyRef.Key)
			case s.ConfigMapKeyRef != nil:
				v = w.configMapKey(s.ConfigMapKeyRef.Name, s.ConfigMapKeyRef.Key)
			case s.FieldRef != nil && s.FieldRef.FieldPath == "metadata.namespace":
				v = w.ns
			default:
				t.Fatalf("%s: %s from %+v is not resolved by this test", component, e.Name, s)
			}
		}
		v = w.resolveServices(v)
		for mountPath, dir := range mounts {
			if rest, ok := strings.CutPrefix(v, mountPath+"/"); ok {
				v = filepath.Join(dir, rest)
			}
		}
		env = append(env, e.Name+"="+v)
	}
	return env
}

// mountSecrets writes the keys of each Secret volume the container mounts into a folder of its own,
// as the kubelet does, and returns the folders by mount path.
func (w *wiring) mountSecrets(component string, spec corev1.PodSpec, ctr corev1.Container) map[string]string {
	out := map[string]string{}
	for _, vm := range ctr.VolumeMounts {
		for _, vol := range spec.Volumes {
			if vol.Name != vm.Name || vol.Secret == nil {
				continue
			}
			if !vm.ReadOnly {
				w.t.Errorf("%s mounts Secret %s writable", component, vol.Secret.SecretName)
			}
			dir := filepath.Join(w.dir, component+"-"+vm.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				w.t.Fatal(err)
			}
			for key, val := range w.secret(vol.Secret.SecretName) {
				if err := os.WriteFile(filepath.Join(dir, key), val, 0o600); err != nil {
					w.t.Fatal(err)
				}
			}
			out[vm.MountPath] = dir
		}
	}
	return out
}

// secret is a Secret's data, rendered or the platform team's.
func (w *wiring) secret(name string) map[string][]byte {
	if data, ok := w.external[name]; ok {
		return data
	}
	o := find(w.objs, "Secret", name)
	if o == nil {
		w.t.Fatalf("no rendered or external Secret %s", name)
	}
	s := typed[corev1.Secret](w.t, o)
	out := map[string][]byte{}
	for k, v := range s.Data {
		out[k] = v
	}
	for k, v := range s.StringData {
		out[k] = []byte(v)
	}
	return out
}

// hasSecretKey reports whether Secret name (the platform team's or a rendered one) has key.
func (w *wiring) hasSecretKey(name, key string) bool {
	if data, ok := w.external[name]; ok {
		_, ok := data[key]
		return ok
	}
	o := find(w.objs, "Secret", name)
	if o == nil {
		return false
	}
	s := typed[corev1.Secret](w.t, o)
	_, inString := s.StringData[key]
	_, inData := s.Data[key]
	return inString || inData
}

func (w *wiring) secretKey(name, key string) string {
	if data, ok := w.external[name]; ok {
		v, ok := data[key]
		if !ok {
			w.t.Fatalf("Secret %s has no key %s", name, key)
		}
		return string(v)
	}
	o := find(w.objs, "Secret", name)
	if o == nil {
		w.t.Fatalf("no rendered Secret %s", name)
	}
	s := typed[corev1.Secret](w.t, o)
	if v, ok := s.StringData[key]; ok {
		return v
	}
	v, ok := s.Data[key]
	if !ok {
		w.t.Fatalf("Secret %s has no key %s", name, key)
	}
	return string(v)
}

func (w *wiring) configMapKey(name, key string) string {
	o := find(w.objs, "ConfigMap", name)
	if o == nil {
		w.t.Fatalf("no rendered ConfigMap %s", name)
	}
	v, ok := typed[corev1.ConfigMap](w.t, o).Data[key]
	if !ok {
		w.t.Fatalf("ConfigMap %s has no key %s", name, key)
	}
	return v
}

var serviceURL = regexp.MustCompile(`//([a-z0-9-]+)(\.[a-z0-9-]+(\.svc(\.cluster\.local)?)?)?:([0-9]+)`)

// resolveServices replaces a rendered Service's host:port in v with the loopback address of the
// process behind it: the Deployment its selector matches, the container port its target port names.
func (w *wiring) resolveServices(v string) string {
	return serviceURL.ReplaceAllStringFunc(v, func(m string) string {
		sub := serviceURL.FindStringSubmatch(m)
		o := find(w.objs, "Service", sub[1])
		if o == nil {
			return m
		}
		svc := typed[corev1.Service](w.t, o)
		port, _ := strconv.Atoi(sub[5])
		for _, sp := range svc.Spec.Ports {
			if int(sp.Port) != port {
				continue
			}
			// The process listens on the rendered container ports (their addresses are in its env).
			for _, d := range kinds(w.objs, "Deployment") {
				dep := typed[appsv1.Deployment](w.t, d)
				if !selects(svc.Spec.Selector, dep.Spec.Template.Labels) {
					continue
				}
				for _, cp := range dep.Spec.Template.Spec.Containers[0].Ports {
					if cp.Name == sp.TargetPort.String() || int(cp.ContainerPort) == sp.TargetPort.IntValue() {
						return fmt.Sprintf("//127.0.0.1:%d", cp.ContainerPort)
					}
				}
			}
		}
		w.t.Fatalf("%s: Service %s has no port %d to a container port", v, sub[1], port)
		return m
	})
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// kubeconfigFor is a kubeconfig that authenticates as the ServiceAccount, with a token the API
// server issued for it.
func (w *wiring) kubeconfigFor(account string) string {
	t := w.t
	t.Helper()
	c := newCluster(t)
	exp := int64(3600)
	tok, err := c.kube.CoreV1().ServiceAccounts(w.ns).CreateToken(w.ctx, account,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token of %s: %v", account, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testbed"] = &clientcmdapi.Cluster{Server: kube.Host, CertificateAuthorityData: kube.CAData}
	cfg.AuthInfos[account] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["pod"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: account, Namespace: w.ns}
	cfg.CurrentContext = "pod"
	path := filepath.Join(w.dir, account+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
