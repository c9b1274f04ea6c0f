package controller_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/internal/controller"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/platform/testbed"
)

// The package shares one real kube-apiserver + etcd (envtest), one MinIO and one PostgreSQL
// cluster; each test gets its own namespace, bucket, database and operator.
var (
	testEnv   *envtest.Environment
	restCfg   *rest.Config
	k8s       client.Client // uncached: assertions see the API server, not an informer
	scheme    = runtime.NewScheme()
	minioSrv  *miniotest.Server
	testStart = time.Now()
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	level := slog.LevelWarn
	if os.Getenv("OPERATOR_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	// client-go's warnings about watches ended by a stopped manager go through klog at info level.
	log := logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bin, err := testbed.Dir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: bin,
	}
	restCfg, err = testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "start envtest (run `make testbed` first): %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop envtest:", err)
		}
	}()
	k8s, err = client.New(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	minioSrv, err = miniotest.Run(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer minioSrv.Stop()
	return pgtest.Main(m)
}

// testClock is the real clock shifted by an offset that tests move forward, so that expiry and
// retention can be reached without waiting while everything else keeps real time.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *testClock) Advance(d time.Duration)         { c.offset.Add(int64(d)) }

// bed is one test's namespace, bucket and operator.
type bed struct {
	t      *testing.T
	ns     string
	store  *objstore.S3
	bucket string
	clock  *testClock
	reg    *prometheus.Registry
	stop   func() // stops the operator; safe to call twice
}

type bedOptions struct {
	cfg    export.Config
	source export.Source
}

// newBed creates a namespace and a bucket and starts an operator on them.
func newBed(t *testing.T, o bedOptions) *bed {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	b := &bed{t: t, ns: ns.Name, clock: &testClock{}}
	b.bucket = miniotest.NewBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := objstore.NewS3(ctx, minioSrv.Config(b.bucket))
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	b.store = store
	b.start(o)
	t.Cleanup(func() { b.stop() })
	return b
}

// start runs an operator (a manager with the controller) for the bed's namespace.
func (b *bed) start(o bedOptions) {
	b.t.Helper()
	if o.cfg.BackoffBase == 0 {
		o.cfg.BackoffBase = 50 * time.Millisecond
	}
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{b.ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr(true)},
		Logger:                 ctrl.Log.WithName(b.ns),
	})
	if err != nil {
		b.t.Fatalf("manager: %v", err)
	}
	b.reg = prometheus.NewRegistry()
	logger := slog.New(slog.NewTextHandler(testWriter{b.t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if _, err := controller.New(mgr, o.cfg, export.Deps{
		Store: b.store, Source: o.source, Clock: b.clock, Logger: logger,
	}, b.reg); err != nil {
		b.t.Fatalf("controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once atomic.Bool
	b.stop = func() {
		if once.Swap(true) {
			return
		}
		cancel()
		if err := <-done; err != nil {
			b.t.Errorf("manager: %v", err)
		}
	}
}

// testWriter sends the operator's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

const (
	authority = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	account1  = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
	account2  = "7dHbWXmci3dT8UFYWYZweBLXgycu7Y3iL6trKn1Y7ARj"
)

func ptr[T any](v T) *T { return &v }

// spec is a valid spec for tests to vary.
func spec() v1alpha1.ExportJobSpec {
	return v1alpha1.ExportJobSpec{
		Authority: authority, FileType: "market-trades", From: 1_700_000_000, To: 1_700_086_400,
		UserPublicKeys: []v1alpha1.PublicKey{account1, account2},
	}
}

// create makes a job in the bed's namespace.
func (b *bed) create(s v1alpha1.ExportJobSpec) *v1alpha1.ExportJob {
	b.t.Helper()
	job := &v1alpha1.ExportJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: fmt.Sprintf("job-%08x", rand.Uint32())},
		Spec:       s,
	}
	if err := k8s.Create(context.Background(), job); err != nil {
		b.t.Fatalf("create job: %v", err)
	}
	return job
}

// get reads the job from the API server.
func (b *bed) get(name string) (*v1alpha1.ExportJob, error) {
	var job v1alpha1.ExportJob
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: b.ns, Name: name}, &job)
	return &job, err
}

// waitFor polls the job until cond holds and returns it; it fails the test after timeout.
func (b *bed) waitFor(name string, timeout time.Duration, what string, cond func(*v1alpha1.ExportJob) bool) *v1alpha1.ExportJob {
	b.t.Helper()
	var (
		last *v1alpha1.ExportJob
		err  error
		held bool
	)
	defer func() { // Eventually's Fatalf runs this on its way out: say what the job looked like.
		if !held {
			b.t.Logf("job %s: last status %+v (err %v)", name, statusOf(last), err)
		}
	}()
	kittest.Eventually(b.t, timeout, "job "+name+": "+what, func() bool {
		var job *v1alpha1.ExportJob
		if job, err = b.get(name); err != nil {
			return false
		}
		last = job
		return cond(job)
	})
	held = true
	return last
}

func statusOf(job *v1alpha1.ExportJob) any {
	if job == nil {
		return nil
	}
	return job.Status
}

func (b *bed) waitPhase(name string, phase v1alpha1.Phase, timeout time.Duration) *v1alpha1.ExportJob {
	b.t.Helper()
	return b.waitFor(name, timeout, "phase "+string(phase), func(j *v1alpha1.ExportJob) bool { return j.Status.Phase == phase })
}

// waitGone waits until the job no longer exists.
func (b *bed) waitGone(name string, timeout time.Duration) {
	b.t.Helper()
	kittest.Eventually(b.t, timeout, "job "+name+" to be gone", func() bool {
		_, err := b.get(name)
		return apierrors.IsNotFound(err)
	})
}

// poke makes the operator look at the job now (after the test clock moved) by touching an
// annotation, as any change to the resource would.
func (b *bed) poke(name string) {
	b.t.Helper()
	job, err := b.get(name)
	if err != nil {
		b.t.Fatalf("poke %s: %v", name, err)
	}
	orig := job.DeepCopy()
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations["test/poke"] = time.Now().Format(time.RFC3339Nano)
	if err := k8s.Patch(context.Background(), job, client.MergeFrom(orig)); err != nil {
		b.t.Fatalf("poke %s: %v", name, err)
	}
}

// objects lists the keys in the bed's bucket.
func (b *bed) objects() []string {
	b.t.Helper()
	mc, err := minio.New(minioSrv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(minioSrv.AccessKey, minioSrv.SecretKey, "")})
	if err != nil {
		b.t.Fatalf("minio client: %v", err)
	}
	var keys []string
	for obj := range mc.ListObjects(context.Background(), b.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			b.t.Fatalf("list objects: %v", obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	return keys
}

// waitEvents waits until events with each of reasons were recorded for the job (the recorder
// sends them asynchronously) and fails the test otherwise.
func (b *bed) waitEvents(job *v1alpha1.ExportJob, reasons ...string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var list corev1.EventList
		if err := k8s.List(context.Background(), &list, client.InNamespace(b.ns)); err != nil {
			b.t.Fatalf("list events: %v", err)
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			if e.InvolvedObject.UID == job.UID {
				seen[e.Reason] = true
			}
		}
		missing := []string{}
		for _, r := range reasons {
			if !seen[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("job %s: no %v events after 10 s (seen %v)", job.Name, missing, seen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// download fetches u.
func download(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	return resp.StatusCode, body
}

// watchJobs watches the namespace's jobs from resourceVersion on.
func watchJobs(ns, resourceVersion string) (watch.Interface, error) {
	wc, err := client.NewWithWatch(restCfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return wc.Watch(context.Background(), &v1alpha1.ExportJobList{}, client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}})
}

func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}
