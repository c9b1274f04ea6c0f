package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export/exporttest"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/platform/testbed"
)

var (
	kube       *rest.Config
	kubeconfig string // a kubeconfig file for the test API server
	binary     string // the operator command, built for the test
	k8s        client.Client
	minioSrv   *miniotest.Server
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		bin, err := testbed.Dir()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		env := &envtest.Environment{
			CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd")},
			ErrorIfCRDPathMissing: true,
			BinaryAssetsDirectory: bin,
		}
		if kube, err = env.Start(); err != nil {
			fmt.Fprintf(os.Stderr, "start envtest (run `make testbed` first): %v\n", err)
			return 1
		}
		defer env.Stop()
		tmp, err := os.MkdirTemp("", "operator-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		user, err := env.AddUser(envtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
		if err == nil {
			var b []byte
			if b, err = user.KubeConfig(); err == nil {
				kubeconfig = filepath.Join(tmp, "kubeconfig")
				err = os.WriteFile(kubeconfig, b, 0o600)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kubeconfig:", err)
			return 1
		}
		binary = filepath.Join(tmp, "operator")
		if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build the operator: %v\n%s", err, out)
			return 1
		}
		scheme := runtime.NewScheme()
		if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if k8s, err = client.New(kube, client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return miniotest.Main(m, &minioSrv)
	}())
}

// replica is the operator command running as its own process, as a pod would.
type replica struct {
	internal string
	stop     func() error
}

func startReplica(t *testing.T, name string, vars map[string]string) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "TIDEMARK_INTERNAL_ADDR="+addr, "TIDEMARK_LOG_LEVEL=warn")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return &replica{internal: "http://" + addr, stop: kittest.StartDaemon(t, "replica "+name, cmd).Stop}
}

func (r *replica) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(r.internal + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func leaseHolder(t *testing.T, ns string) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "exportjobs.exports.tidemark.io"}, &lease); err != nil {
		return ""
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func createJob(t *testing.T, ns string) *v1alpha1.ExportJob {
	t.Helper()
	job := &v1alpha1.ExportJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "export-"},
		Spec: v1alpha1.ExportJobSpec{
			Authority: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", FileType: "funding-rates", From: 1, To: 2,
			UserPublicKeys: []v1alpha1.PublicKey{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"},
		},
	}
	if err := k8s.Create(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	return job
}

func waitReady(t *testing.T, job *v1alpha1.ExportJob) {
	t.Helper()
	kittest.Eventually(t, 30*time.Second, job.Name+" Ready", func() bool {
		var got v1alpha1.ExportJob
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(job), &got)
		return err == nil && got.Status.Phase == v1alpha1.PhaseReady
	})
}

// Two replicas of the command: one leads and runs jobs, both serve health and metrics; when the
// leader stops it hands over and the other runs the next job.
func TestReplicasElectOneLeader(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "op-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	src := exporttest.Start(t, &exporttest.Server{Rows: 50})
	// In a cluster the bucket exists before the operator; here the test makes it.
	if _, err := objstore.NewS3(context.Background(), minioSrv.Config("op-"+ns.Name)); err != nil {
		t.Fatal(err)
	}
	vars := func() map[string]string {
		return map[string]string{
			"TIDEMARK_NAMESPACE":      ns.Name,
			"TIDEMARK_EXPORT_SOURCES": "funding-rates=" + strings.TrimSuffix(src.URL(), "/"),
			"TIDEMARK_S3_ENDPOINT":    minioSrv.Endpoint, "TIDEMARK_S3_BUCKET": "op-" + ns.Name,
			"TIDEMARK_S3_ACCESS_KEY": minioSrv.AccessKey, "TIDEMARK_S3_SECRET_KEY": minioSrv.SecretKey,
		}
	}
	a := startReplica(t, "a", vars())
	kittest.Eventually(t, 30*time.Second, "a leader", func() bool { return leaseHolder(t, ns.Name) != "" })
	b := startReplica(t, "b", vars())
	first := leaseHolder(t, ns.Name)

	waitReady(t, createJob(t, ns.Name))
	for _, r := range []*replica{a, b} {
		kittest.Eventually(t, 20*time.Second, "ready replicas", func() bool { code, _ := r.get(t, "/readyz"); return code == 200 })
		if code, _ := r.get(t, "/healthz"); code != 200 {
			t.Errorf("healthz %d", code)
		}
	}
	// The jobs gauge follows the job's status a moment after the API server has it: under load that
	// moment is longer than the test's own reads.
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body = a.get(t, "/metrics")
		if strings.Contains(body, `tidemark_export_jobs{phase="Ready"} 1`) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(body, `tidemark_export_jobs{phase="Ready"} 1`) {
		t.Errorf("metrics of the leader lack the Ready job:\n%s", grep(body, "tidemark_export"))
	}

	if err := a.stop(); err != nil {
		t.Fatalf("leader stopped with %v", err)
	}
	kittest.Eventually(t, 30*time.Second, "b to take the lead", func() bool {
		h := leaseHolder(t, ns.Name)
		return h != "" && h != first
	})
	waitReady(t, createJob(t, ns.Name))
}

func TestConfigurationErrors(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"no bucket", map[string]string{"TIDEMARK_S3_ENDPOINT": "127.0.0.1:1", "TIDEMARK_S3_ACCESS_KEY": "k", "TIDEMARK_S3_SECRET_KEY": "s"}, "bucket"},
		{"bad source", map[string]string{"TIDEMARK_EXPORT_SOURCES": "orders=http://x"}, "unknown file type"},
		{"bad number", map[string]string{"TIDEMARK_EXPORT_MAX_CONCURRENT": "many"}, "TIDEMARK_EXPORT_MAX_CONCURRENT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) { v, ok := tc.vars[k]; return v, ok }}
			err := run(context.Background(), env, kube, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run = %v, want a configuration error mentioning %s", err, tc.want)
			}
		})
	}
}

func grep(body, substr string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
