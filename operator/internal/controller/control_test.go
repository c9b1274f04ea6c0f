package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/export/exporttest"
	"github.com/tidemark/tidemark/operator/internal/controller"
)

// slowSource streams 100 rows every 50 ms: 60 s for its 120000 rows, longer than any test waits.
func slowSource(t *testing.T) *exporttest.Server {
	return exporttest.Start(t, &exporttest.Server{Rows: 120_000, RowDelay: 50 * time.Millisecond})
}

func isRunning(j *v1alpha1.ExportJob) bool {
	return j.Status.Phase == v1alpha1.PhaseRunning && j.Status.Progress != "" && j.Status.Progress != "0 rows"
}

func TestDeadlineFailsJob(t *testing.T) {
	src := slowSource(t)
	b := newBed(t, bedOptions{source: src.Source()})
	s := spec()
	s.ActiveDeadlineSeconds = ptr(int64(2))
	job := b.create(s)

	got := b.waitPhase(job.Name, v1alpha1.PhaseFailed, 20*time.Second)
	if c := findCondition(got); c == nil || c.Reason != "DeadlineExceeded" {
		t.Errorf("condition %+v, want DeadlineExceeded", c)
	}
	if !strings.Contains(got.Status.FailureReason, "activeDeadlineSeconds") {
		t.Errorf("failureReason %q", got.Status.FailureReason)
	}
	if d := got.Status.CompletedAt.Sub(got.Status.StartedAt.Time); d < 2*time.Second || d > 5*time.Second {
		t.Errorf("failed %s after start, want about 2 s", d)
	}
	src.WaitInflight(t, 0)
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v, want nothing", keys)
	}
}

func TestCancelStopsJob(t *testing.T) {
	src := slowSource(t)
	b := newBed(t, bedOptions{source: src.Source()})
	job := b.create(spec())
	b.waitFor(job.Name, 20*time.Second, "progress", isRunning)

	cur, err := b.get(job.Name)
	if err != nil {
		t.Fatal(err)
	}
	orig := cur.DeepCopy()
	cur.Spec.Cancel = true
	if err := k8s.Patch(context.Background(), cur, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
	got := b.waitPhase(job.Name, v1alpha1.PhaseCancelled, 10*time.Second)
	if c := findCondition(got); c == nil || c.Reason != "Cancelled" || c.ObservedGeneration != got.Generation {
		t.Errorf("condition %+v, want Cancelled at generation %d", c, got.Generation)
	}
	src.WaitInflight(t, 0)
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v, want nothing", keys)
	}
	b.waitEvents(got, "Started", "Cancelled")
}

func TestDeletingJobDeletesObject(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 100})
	b := newBed(t, bedOptions{source: src.Source()})
	job := b.create(spec())
	b.waitPhase(job.Name, v1alpha1.PhaseReady, 20*time.Second)
	if keys := b.objects(); len(keys) != 2 {
		t.Fatalf("bucket holds %v, want the file and its manifest", keys)
	}
	if err := k8s.Delete(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	b.waitGone(job.Name, 10*time.Second)
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v after the job was deleted, want nothing", keys)
	}
}

// An operator stopped mid-upload and a new one started (a restart or a leader change) end with one
// file, a correct count and a second attempt, never a job stuck in Running.
func TestOperatorRestartMidJob(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 6000, RowDelay: 50 * time.Millisecond})
	b := newBed(t, bedOptions{source: src.Source()})
	job := b.create(spec())
	b.waitFor(job.Name, 20*time.Second, "progress", isRunning)

	b.stop()
	src.WaitInflight(t, 0)
	if keys := b.objects(); len(keys) != 0 {
		t.Fatalf("bucket holds %v after the interrupted upload, want nothing", keys)
	}
	b.start(bedOptions{source: src.Source()})

	got := b.waitPhase(job.Name, v1alpha1.PhaseReady, 30*time.Second)
	if got.Status.Attempts != 2 || got.Status.RecordCount != 6000 || src.Requests() != 2 {
		t.Errorf("attempts %d records %d requests %d, want 2, 6000, 2", got.Status.Attempts, got.Status.RecordCount, src.Requests())
	}
	keys := b.objects()
	if len(keys) != 2 || !slices.Contains(keys, got.Status.ObjectKey) {
		t.Errorf("bucket holds %v, want one file and its manifest", keys)
	}
}

// A restart after the file and manifest were stored but before the status said so finishes the job
// from the manifest, without uploading again.
func TestRestartAfterUploadUsesManifest(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 300})
	b := newBed(t, bedOptions{source: src.Source()})
	job := b.create(spec())
	first := b.waitPhase(job.Name, v1alpha1.PhaseReady, 20*time.Second)
	b.stop()

	// Put the status back to Running, as if the operator died before writing Ready.
	cur := first.DeepCopy()
	cur.Status.Phase = v1alpha1.PhaseRunning
	cur.Status.RecordCount, cur.Status.Bytes = 0, 0
	cur.Status.ReadyAt, cur.Status.ExpiresAt, cur.Status.CompletedAt = nil, nil, nil
	if err := k8s.Status().Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	b.start(bedOptions{source: src.Source()})
	got := b.waitPhase(job.Name, v1alpha1.PhaseReady, 20*time.Second)
	if src.Requests() != 1 || got.Status.Attempts != 1 {
		t.Errorf("requests %d attempts %d, want 1 and 1 (no second upload)", src.Requests(), got.Status.Attempts)
	}
	if got.Status.RecordCount != 300 || !got.Status.ReadyAt.Equal(first.Status.ReadyAt) {
		t.Errorf("records %d readyAt %v, want 300 and %v", got.Status.RecordCount, got.Status.ReadyAt, first.Status.ReadyAt)
	}
}

func TestConcurrencyCap(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 6000, RowDelay: 50 * time.Millisecond})
	b := newBed(t, bedOptions{source: src.Source(), cfg: export.Config{MaxConcurrent: 1, QueuedRetry: 100 * time.Millisecond}})
	first := b.create(spec())
	b.waitFor(first.Name, 20*time.Second, "progress", isRunning)
	second := b.create(spec())
	queued := b.waitFor(second.Name, 10*time.Second, "queued", func(j *v1alpha1.ExportJob) bool {
		c := findCondition(j)
		return c != nil && c.Reason == "Queued"
	})
	if queued.Status.Phase != v1alpha1.PhasePending || src.Inflight() != 1 {
		t.Errorf("second job %s with %d streams open, want Pending with 1", queued.Status.Phase, src.Inflight())
	}
	b.waitPhase(first.Name, v1alpha1.PhaseReady, 30*time.Second)
	b.waitPhase(second.Name, v1alpha1.PhaseReady, 30*time.Second)
}

// While a job runs its status is written about once a second, not on every row.
func TestStatusWritesAreThrottled(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 30000, RowDelay: 20 * time.Millisecond})
	b := newBed(t, bedOptions{source: src.Source(), cfg: export.Config{ProgressInterval: 10 * time.Millisecond}})
	job := b.create(spec())
	b.waitFor(job.Name, 20*time.Second, "progress", isRunning)

	var list v1alpha1.ExportJobList
	if err := k8s.List(context.Background(), &list, client.InNamespace(b.ns)); err != nil {
		t.Fatal(err)
	}
	w, err := watchJobs(b.ns, list.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(3 * time.Second)
	writes := 0
	for done := false; !done; {
		select {
		case <-w.ResultChan():
			writes++
		case <-deadline:
			done = true
		}
	}
	if writes < 2 || writes > 4 {
		t.Errorf("%d status writes in 3 s, want 2..4 (about one a second)", writes)
	}
}

// kubectl from the machine, against the test API server, prints the columns platform teams follow.
func TestKubectlColumns(t *testing.T) {
	// One service per file type: market-trades answers, funding-rates refuses, trades is slow.
	ok := exporttest.Start(t, &exporttest.Server{Rows: 42})
	refusing := exporttest.Start(t, &exporttest.Server{Status: 400})
	slow := slowSource(t)
	b := newBed(t, bedOptions{source: export.HTTPSource{Endpoints: map[v1alpha1.FileType]string{
		"market-trades": ok.URL(), "funding-rates": refusing.URL(), "trades": slow.URL(),
	}}})
	job := b.create(spec())
	failing, running := spec(), spec()
	failing.FileType, running.FileType = "funding-rates", "trades"
	failed, busy := b.create(failing), b.create(running)
	b.waitPhase(job.Name, v1alpha1.PhaseReady, 20*time.Second)
	b.waitPhase(failed.Name, v1alpha1.PhaseFailed, 20*time.Second)
	b.waitFor(busy.Name, 20*time.Second, "progress", isRunning)

	kubectl := testEnv.ControlPlane.KubeCtl()
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := kubectl.Run(args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, readAll(stderr))
		}
		out := readAll(stdout)
		t.Logf("$ kubectl %s\n%s", strings.Join(args, " "), out)
		return out
	}
	out := run("get", "exportjobs", "-n", b.ns)
	for _, col := range []string{"NAME", "AUTHORITY", "TYPE", "PHASE", "RECORDS", "STARTED", "EXPIRES", "AGE"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get exportjobs has no %s column", col)
		}
	}
	if !strings.Contains(out, job.Name) || !strings.Contains(out, "Ready") || !strings.Contains(out, " 42 ") {
		t.Errorf("kubectl get exportjobs does not show the ready job with 42 records")
	}
	if !strings.Contains(out, "Failed") || !strings.Contains(out, "Running") {
		t.Errorf("kubectl get exportjobs does not show the failed and the running job")
	}
	if strings.Contains(out, "REASON") {
		t.Errorf("REASON should only show in wide output")
	}
	wide := run("get", "ej", "-n", b.ns, "-o", "wide", "-l", fmt.Sprintf("%s=%s", v1alpha1.AuthorityLabel, authority))
	if !strings.Contains(wide, "REASON") || !strings.Contains(wide, "PROGRESS") || !strings.Contains(wide, job.Name) ||
		!strings.Contains(wide, "SourceRejected") {
		t.Errorf("kubectl get ej -o wide -l authority does not show the jobs with REASON and PROGRESS")
	}
	other := run("get", "ej", "-n", b.ns, "-l", v1alpha1.AuthorityLabel+"="+account1)
	if strings.Contains(other, job.Name) {
		t.Errorf("selecting another authority listed the job")
	}
}

// TestDrainLeavesNoFinalizer: what a release's uninstall runs before its operator and CRD go. With
// the operator running, it finalizes the deleted jobs; with none, Drain does: either way no job
// (whose finalizer would hold the CRD in Terminating) and no file is left.
func TestDrainLeavesNoFinalizer(t *testing.T) {
	ctx := context.Background()
	src := exporttest.Start(t, &exporttest.Server{Rows: 100})
	b := newBed(t, bedOptions{source: src.Source()})
	for range 2 {
		b.waitPhase(b.create(spec()).Name, v1alpha1.PhaseReady, 20*time.Second)
	}
	d, err := controller.Drain(ctx, k8s, b.store, b.ns, 20*time.Second)
	if err != nil || d.Jobs != 2 || d.ByOperator != 2 {
		t.Fatalf("drain beside a running operator: %+v %v, want 2 jobs finalized by it", d, err)
	}
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v after the drain, want nothing", keys)
	}

	// No operator: the jobs it had finalized and stored stay behind unless Drain finalizes them.
	job := b.create(spec())
	b.waitPhase(job.Name, v1alpha1.PhaseReady, 20*time.Second)
	b.stop()
	d, err = controller.Drain(ctx, k8s, b.store, b.ns, time.Second)
	if err != nil || d.Jobs != 1 || d.ByOperator != 0 {
		t.Fatalf("drain with no operator: %+v %v, want 1 job finalized by the drain", d, err)
	}
	b.waitGone(job.Name, 10*time.Second)
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v after the drain, want nothing", keys)
	}
}
