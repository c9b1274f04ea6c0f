package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
)

// The API server itself refuses bad specs (schema and CEL rules), with no operator running; the
// Go Validate used without a cluster agrees with it on every case.
func TestAPIServerRefusesBadSpecs(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.ExportJobSpec)
		want   string // in the API server's message; "" means accepted
	}{
		{"valid", func(*v1alpha1.ExportJobSpec) {}, ""},
		{"valid with market", func(s *v1alpha1.ExportJobSpec) { s.Market = ptr("SOL-PERP") }, ""},
		{"from after to", func(s *v1alpha1.ExportJobSpec) { s.From, s.To = 200, 100 }, "from must not be after to"},
		{"range over 366 days", func(s *v1alpha1.ExportJobSpec) { s.From, s.To = 0, v1alpha1.MaxRangeSeconds+1 }, "at most 366 days"},
		{"negative from", func(s *v1alpha1.ExportJobSpec) { s.From = -1 }, "spec.from"},
		{"unknown file type", func(s *v1alpha1.ExportJobSpec) { s.FileType = "orders" }, "spec.fileType"},
		{"no accounts", func(s *v1alpha1.ExportJobSpec) { s.UserPublicKeys = nil }, "spec.userPublicKeys"},
		{"duplicate accounts", func(s *v1alpha1.ExportJobSpec) { s.UserPublicKeys = []v1alpha1.PublicKey{account1, account1} }, "Duplicate value"},
		{"account not base58", func(s *v1alpha1.ExportJobSpec) {
			s.UserPublicKeys = []v1alpha1.PublicKey{"0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl"}
		}, "spec.userPublicKeys[0]"},
		{"authority not base58", func(s *v1alpha1.ExportJobSpec) { s.Authority = "not-a-key" }, "spec.authority"},
		{"bad market", func(s *v1alpha1.ExportJobSpec) { s.Market = ptr("SOL PERP") }, "spec.market"},
		{"backoffLimit too high", func(s *v1alpha1.ExportJobSpec) { s.BackoffLimit = ptr(int32(11)) }, "spec.backoffLimit"},
		{"zero deadline", func(s *v1alpha1.ExportJobSpec) { s.ActiveDeadlineSeconds = ptr(int64(0)) }, "spec.activeDeadlineSeconds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.mutate(&s)
			job := &v1alpha1.ExportJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: "v-"}, Spec: s}
			err := k8s.Create(context.Background(), job)
			verr := s.Validate()
			if tc.want == "" {
				if err != nil || verr != nil {
					t.Fatalf("refused a valid spec: API server %v, Validate %v", err, verr)
				}
				if *job.Spec.BackoffLimit != 3 || *job.Spec.ActiveDeadlineSeconds != 3600 || *job.Spec.TTLSecondsAfterFinished != 604800 {
					t.Errorf("defaults not applied: %+v", job.Spec)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("API server answered %v, want Invalid mentioning %q", err, tc.want)
			}
			if verr == nil {
				t.Errorf("Validate accepted what the API server refuses")
			}
		})
	}
}

// Everything but cancel is immutable, and cancel cannot be undone.
func TestAPIServerRefusesSpecChanges(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mutate func(*v1alpha1.ExportJobSpec)
		want   string
	}{
		{"cancel", func(s *v1alpha1.ExportJobSpec) { s.Cancel = true }, ""},
		{"change range", func(s *v1alpha1.ExportJobSpec) { s.To++ }, "spec is immutable except cancel"},
		{"change accounts", func(s *v1alpha1.ExportJobSpec) { s.UserPublicKeys = s.UserPublicKeys[:1] }, "spec is immutable except cancel"},
		{"reorder accounts (a set)", func(s *v1alpha1.ExportJobSpec) {
			s.UserPublicKeys = []v1alpha1.PublicKey{s.UserPublicKeys[1], s.UserPublicKeys[0]}
		}, ""},
		{"add market", func(s *v1alpha1.ExportJobSpec) { s.Market = ptr("SOL-PERP") }, "spec is immutable except cancel"},
		{"change file type", func(s *v1alpha1.ExportJobSpec) { s.FileType = "funding-rates" }, "spec is immutable except cancel"},
		{"change backoffLimit", func(s *v1alpha1.ExportJobSpec) { s.BackoffLimit = ptr(int32(5)) }, "spec is immutable except cancel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := &v1alpha1.ExportJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: "v-"}, Spec: spec()}
			if err := k8s.Create(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			orig := job.DeepCopy()
			tc.mutate(&job.Spec)
			err := k8s.Patch(context.Background(), job, client.MergeFrom(orig))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("answered %v, want Invalid mentioning %q", err, tc.want)
			}
		})
	}

	t.Run("uncancel", func(t *testing.T) {
		s := spec()
		s.Cancel = true
		job := &v1alpha1.ExportJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, GenerateName: "v-"}, Spec: s}
		if err := k8s.Create(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		err := k8s.Patch(context.Background(), job, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"cancel":false}}`)))
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cancel cannot be undone") {
			t.Errorf("answered %v, want Invalid: cancel cannot be undone", err)
		}
	})
}

// KubeJobs is how the export API will create and list jobs: validated, labelled, newest first.
func TestKubeJobs(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	jobs := export.KubeJobs{Client: k8s, Namespace: ns.Name}
	bad := spec()
	bad.UserPublicKeys = nil
	if _, err := jobs.Create(context.Background(), "", bad); !errors.Is(err, export.ErrInvalid) {
		t.Fatalf("Create(no accounts) = %v, want ErrInvalid", err)
	}
	older, err := jobs.Create(context.Background(), "", spec())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	newer, err := jobs.Create(context.Background(), "", spec())
	if err != nil {
		t.Fatal(err)
	}
	other := spec()
	other.Authority = account2
	if _, err := jobs.Create(context.Background(), "", other); err != nil {
		t.Fatal(err)
	}
	list, err := jobs.List(context.Background(), authority)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != newer.Name || list[1].Name != older.Name {
		names := []string{}
		for _, j := range list {
			names = append(names, j.Name)
		}
		t.Errorf("List = %v, want [%s %s]", names, newer.Name, older.Name)
	}
	if newer.Labels[v1alpha1.AuthorityLabel] != authority {
		t.Errorf("labels %v", newer.Labels)
	}

	// A name is created once; creating it again returns the job, even from another client.
	named, err := jobs.Create(context.Background(), "export-abc123", spec())
	if err != nil || named.Name != "export-abc123" {
		t.Fatalf("Create(named) = %+v, %v", named, err)
	}
	again, err := export.KubeJobs{Client: k8s, Namespace: ns.Name}.Create(context.Background(), "export-abc123", other)
	if err != nil || again.UID != named.UID || again.Spec.Authority != authority {
		t.Fatalf("Create(named) again = %+v, %v; want the first job", again, err)
	}
	if _, err := jobs.Create(context.Background(), "Export_ABC", spec()); !errors.Is(err, export.ErrInvalid) {
		t.Errorf("Create(bad name) = %v, want ErrInvalid", err)
	}
	if list, _ := jobs.List(context.Background(), authority); len(list) != 3 {
		t.Errorf("%d jobs of the authority, want 3", len(list))
	}
}
