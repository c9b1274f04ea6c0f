package local_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/export/exporttest"
	"github.com/tidemark/tidemark/operator/local"
	"github.com/tidemark/tidemark/platform/objstore"
)

const (
	authority = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
	account   = "4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T"
)

type testClock struct{ offset atomic.Int64 }

func (c *testClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// fixture is a runner on a local folder store whose download handler is served over HTTP.
type fixture struct {
	runner *local.Runner
	store  *objstore.Local
	dir    string
	clock  *testClock
	reg    *prometheus.Registry
}

func newFixture(t *testing.T, src *exporttest.Server, cfg export.Config) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), clock: &testClock{}, reg: prometheus.NewRegistry()}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	store, err := objstore.NewLocal(objstore.LocalConfig{
		Dir: f.dir, BaseURL: srv.URL + "/downloads", Key: []byte("local-runner-test-key-0123456789"), Now: f.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/downloads/", http.StripPrefix("/downloads", store.Handler()))
	f.store = store
	f.runner, err = local.New(cfg, export.Deps{
		Store: store, Source: src.Source(), Clock: f.clock, Logger: slog.New(slog.DiscardHandler),
	}, f.reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runner: %v", err)
		}
	})
	return f
}

func (f *fixture) waitPhase(t *testing.T, name string, phase v1alpha1.Phase) *v1alpha1.ExportJob {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		job, err := f.runner.Get(context.Background(), name)
		if err == nil && job.Status.Phase == phase {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no phase %s after 20 s (last %+v, %v)", name, phase, job, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func spec() v1alpha1.ExportJobSpec {
	return v1alpha1.ExportJobSpec{
		Authority: authority, FileType: "funding-rates", From: 1_700_000_000, To: 1_700_003_600,
		UserPublicKeys: []v1alpha1.PublicKey{account},
	}
}

func TestLocalRunnerRunsJobToReadyAndExpiry(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 777})
	f := newFixture(t, src, export.Config{})
	job, err := f.runner.Create(context.Background(), "", spec())
	if err != nil {
		t.Fatal(err)
	}
	got := f.waitPhase(t, job.Name, v1alpha1.PhaseReady)
	if got.Status.RecordCount != 777 || got.Status.Bytes != int64(len(src.CSV())) {
		t.Errorf("records %d bytes %d, want 777 and %d", got.Status.RecordCount, got.Status.Bytes, len(src.CSV()))
	}
	list, err := f.runner.List(context.Background(), authority)
	if err != nil || len(list) != 1 || list[0].Name != job.Name {
		t.Fatalf("List = %v, %v; want the job", list, err)
	}

	// The HMAC-signed URL downloads the file until expiresAt.
	u, err := f.store.URL(context.Background(), got.Status.ObjectKey, got.Status.ExpiresAt.Time)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != src.CSV() || !strings.Contains(resp.Header.Get("Content-Disposition"), "funding-rates-") {
		t.Fatalf("download: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Disposition"), len(body))
	}

	f.clock.offset.Add(int64(8*time.Hour + time.Second))
	f.runner.Wake()
	exp := f.waitPhase(t, job.Name, v1alpha1.PhaseExpired)
	if _, err := f.store.Stat(context.Background(), exp.Status.ObjectKey); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("file still stored after expiry: %v", err)
	}
	if resp, err := http.Get(u); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("download after expiry: %v, %v; want 403", resp, err)
	}
}

func TestLocalRunnerRefusesInvalidSpec(t *testing.T) {
	f := newFixture(t, exporttest.Start(t, &exporttest.Server{}), export.Config{})
	s := spec()
	s.From, s.To = 10, 5
	if _, err := f.runner.Create(context.Background(), "", s); !errors.Is(err, export.ErrInvalid) {
		t.Fatalf("Create = %v, want ErrInvalid", err)
	}
}

// A named job is created once: creating the name again returns it, whatever the spec says; a name
// the API server would refuse is refused.
func TestLocalRunnerNamedJobs(t *testing.T) {
	f := newFixture(t, exporttest.Start(t, &exporttest.Server{Rows: 3}), export.Config{})
	first, err := f.runner.Create(context.Background(), "export-0123abc", spec())
	if err != nil || first.Name != "export-0123abc" || first.Labels[v1alpha1.AuthorityLabel] != authority {
		t.Fatalf("Create = %+v, %v", first, err)
	}
	other := spec()
	other.To++
	again, err := f.runner.Create(context.Background(), "export-0123abc", other)
	if err != nil || again.UID != first.UID || again.Spec.To != first.Spec.To {
		t.Fatalf("Create again = %+v, %v; want the first job", again, err)
	}
	if list, _ := f.runner.List(context.Background(), authority); len(list) != 1 {
		t.Fatalf("%d jobs after creating one name twice", len(list))
	}
	for _, bad := range []string{"Export-1", "export_1", "-x", strings.Repeat("a", 254)} {
		if _, err := f.runner.Create(context.Background(), bad, spec()); !errors.Is(err, export.ErrInvalid) {
			t.Errorf("Create(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestLocalRunnerCancelAndDelete(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 100_000, RowDelay: 50 * time.Millisecond})
	f := newFixture(t, src, export.Config{})
	job, err := f.runner.Create(context.Background(), "", spec())
	if err != nil {
		t.Fatal(err)
	}
	f.waitPhase(t, job.Name, v1alpha1.PhaseRunning)
	if err := f.runner.Cancel(context.Background(), job.Name); err != nil {
		t.Fatal(err)
	}
	f.waitPhase(t, job.Name, v1alpha1.PhaseCancelled)
	src.WaitInflight(t, 0)
	if err := f.runner.Delete(context.Background(), job.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := f.runner.Get(context.Background(), job.Name); err == nil {
		t.Error("job still listed after Delete")
	}
	var files []string
	_ = filepath.WalkDir(f.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 0 {
		t.Errorf("store holds %v, want nothing", files)
	}
}
