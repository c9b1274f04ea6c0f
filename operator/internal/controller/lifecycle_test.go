package controller_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/export/exporttest"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
)

func TestJobRunsToReadyAndExpires(t *testing.T) {
	src := exporttest.Start(t, &exporttest.Server{Rows: 2500})
	b := newBed(t, bedOptions{source: src.Source()})
	s := spec()
	s.TTLSecondsAfterFinished = ptr(int32(60))
	job := b.create(s)

	got := b.waitPhase(job.Name, v1alpha1.PhaseReady, 30*time.Second)
	st := got.Status
	want := src.CSV()
	if st.RecordCount != 2500 || st.Bytes != int64(len(want)) || st.Attempts != 1 {
		t.Errorf("status records=%d bytes=%d attempts=%d, want 2500, %d, 1", st.RecordCount, st.Bytes, st.Attempts, len(want))
	}
	if st.ObjectKey != export.ObjectKey(got) {
		t.Errorf("objectKey %q, want %q", st.ObjectKey, export.ObjectKey(got))
	}
	if st.ReadyAt == nil || st.ExpiresAt == nil || !st.ExpiresAt.Time.Equal(st.ReadyAt.Add(8*time.Hour)) {
		t.Errorf("readyAt %v expiresAt %v, want expiresAt = readyAt + 8h", st.ReadyAt, st.ExpiresAt)
	}
	cond := findCondition(got)
	if cond == nil || cond.Status != "True" || cond.Reason != "Ready" || cond.ObservedGeneration != got.Generation {
		t.Errorf("Succeeded condition %+v, want True/Ready at generation %d", cond, got.Generation)
	}
	if got.Labels[v1alpha1.AuthorityLabel] != authority || !slices.Contains(got.Finalizers, "exports.tidemark.io/stored-object") {
		t.Errorf("labels %v finalizers %v: want the authority label and the finalizer", got.Labels, got.Finalizers)
	}
	b.waitEvents(got, "Started", "Ready")

	// The file in MinIO is exactly what the service sent, downloadable until expiresAt.
	u, err := b.store.URL(context.Background(), st.ObjectKey, st.ExpiresAt.Time)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := download(t, u); code != 200 || string(body) != want {
		t.Fatalf("download: %d, %d bytes; want 200 and the source's %d bytes", code, len(body), len(want))
	}
	if keys := b.objects(); len(keys) != 2 || !slices.Contains(keys, st.ObjectKey) {
		t.Errorf("bucket holds %v, want the file and its manifest", keys)
	}
	if v := kittest.Metric(t, b.reg, "tidemark_export_rows_total", nil); v != 2500 {
		t.Errorf("rows metric %v, want 2500", v)
	}

	// At expiresAt the file is deleted and the job Expired; 60 s later the job itself goes.
	b.clock.Advance(8*time.Hour + time.Second)
	b.poke(job.Name)
	exp := b.waitPhase(job.Name, v1alpha1.PhaseExpired, 10*time.Second)
	if c := findCondition(exp); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Expired" {
		t.Errorf("condition after expiry %+v, want False/Expired", c)
	}
	if keys := b.objects(); len(keys) != 0 {
		t.Errorf("bucket holds %v after expiry, want nothing", keys)
	}
	if _, err := b.store.Stat(context.Background(), st.ObjectKey); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("stat after expiry: %v, want ErrNotFound", err)
	}
	b.clock.Advance(61 * time.Second)
	b.poke(job.Name)
	b.waitGone(job.Name, 10*time.Second)
}

func findCondition(job *v1alpha1.ExportJob) *metav1.Condition {
	return meta.FindStatusCondition(job.Status.Conditions, v1alpha1.ConditionSucceeded)
}

func TestFailingSourceRetriesThenFails(t *testing.T) {
	tests := []struct {
		name         string
		src          *exporttest.Server
		backoffLimit int32
		wantReason   string
		wantRequests int32
		wantMessage  string
	}{
		{"server errors exhaust the retries", &exporttest.Server{Rows: 10, Fail: 100}, 2, "BackoffLimitExceeded", 3, "500"},
		{"a refusal is not retried", &exporttest.Server{Status: 400}, 2, "SourceRejected", 1, "refused with 400"},
		{"one server error is retried", &exporttest.Server{Rows: 10, Fail: 1}, 2, "", 2, ""},
		{"a stream cut short is retried", &exporttest.Server{Rows: 10, Truncate: 1}, 2, "", 2, ""},
		{"streams always cut short fail", &exporttest.Server{Rows: 10, Truncate: 100}, 1, "BackoffLimitExceeded", 2, "trailer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := exporttest.Start(t, tc.src)
			b := newBed(t, bedOptions{source: src.Source()})
			s := spec()
			s.BackoffLimit = ptr(tc.backoffLimit)
			job := b.create(s)
			if tc.wantReason == "" {
				got := b.waitPhase(job.Name, v1alpha1.PhaseReady, 30*time.Second)
				if got.Status.Attempts != tc.wantRequests || got.Status.RecordCount != 10 {
					t.Errorf("attempts %d records %d, want %d and 10", got.Status.Attempts, got.Status.RecordCount, tc.wantRequests)
				}
				return
			}
			got := b.waitPhase(job.Name, v1alpha1.PhaseFailed, 30*time.Second)
			c := findCondition(got)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason {
				t.Errorf("condition %+v, want False/%s", c, tc.wantReason)
			}
			if !strings.Contains(got.Status.FailureReason, tc.wantMessage) {
				t.Errorf("failureReason %q, want it to mention %q", got.Status.FailureReason, tc.wantMessage)
			}
			if n := src.Requests(); n != tc.wantRequests || got.Status.Attempts != tc.wantRequests {
				t.Errorf("source saw %d requests, status says %d attempts; want %d", n, got.Status.Attempts, tc.wantRequests)
			}
			if keys := b.objects(); len(keys) != 0 {
				t.Errorf("bucket holds %v, want nothing", keys)
			}
			if tc.wantRequests > 1 {
				b.waitEvents(got, "AttemptFailed", tc.wantReason)
			} else {
				b.waitEvents(got, tc.wantReason)
			}
		})
	}
}
