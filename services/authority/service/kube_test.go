package service_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/services/authority"
	"github.com/tidemark/tidemark/services/authority/service"
	market "github.com/tidemark/tidemark/services/market/service"
	user "github.com/tidemark/tidemark/services/user/service"
)

// TestExportsInTheCluster is the cluster's path end to end: the market, user and authority services,
// the authority creating ExportJobs through the Kubernetes API as its ServiceAccount (with the rules of
// the chart's authority.rbac, nothing more), the operator command running them into MinIO from each
// owning service's internal port, and the API listing them ready with presigned URLs that download the
// files. One file type per owning service: market-trades (market), trades (user), if-stake-records
// (authority). kubectl and the API list the same jobs.
func TestExportsInTheCluster(t *testing.T) {
	c := cluster(t)
	ns := c.namespace(t)
	bucket := miniotest.NewBucket(t)
	// In a cluster the bucket exists before the operator and the service; here the test makes it.
	if _, err := objstore.NewS3(context.Background(), c.minio.Config(bucket)); err != nil {
		t.Fatal(err)
	}
	// The service finds its cluster as in a pod: here through KUBECONFIG, as its ServiceAccount.
	saKubeconfig := c.serviceAccount(t, ns)
	t.Setenv("KUBECONFIG", saKubeconfig)
	s := kittest.Up(t, kittest.Options{}, market.Service(market.Config{}), user.Service(),
		service.Service(service.Config{MaxUnfinishedExports: 5, Namespace: ns, S3: c.minio.Config(bucket)}))
	c.startOperator(t, ns, bucket, map[v1alpha1.FileType]string{
		"market-trades":    s.InternalServer(t, "market").URL,
		"trades":           s.InternalServer(t, "user").URL,
		"if-stake-records": s.InternalServer(t, "authority").URL,
	})
	st := &stack{Stack: s}

	// The wallet's accounts, its stakes, and SOL-PERP fills: three taken by its main account, two by
	// someone else (a market's trades are exported for the job's accounts, as taker or maker).
	seed(t, st)
	var fills []events.Record
	for i := range 5 {
		f := kittest.Fill(kittest.SOLPerp, at("2026-11-18T09:00:00Z")+int64(i)*60, 100+i, 150_000_000, 1_000_000_000, 150_000_000)
		if i < 3 {
			f.Taker = main
		}
		fills = append(fills, f)
	}
	s.Ingest(t, encode(t, events.TopicFills, fills...)...)

	requests := map[string]struct {
		body    string
		records int64
		column  string // a column whose every value is want
		want    string
	}{
		"trades":           {body("trades", main, sub1), 3, "user", main},
		"market-trades":    {strings.Replace(body("market-trades", main), "}", `,"market":"SOL-PERP"}`, 1), 3, "taker", main},
		"if-stake-records": {body("if-stake-records", main), 2, "userAuthority", wallet},
	}
	ids := map[string]string{}
	for ft, r := range requests {
		ids[ft] = st.createExport(t, wallet, r.body).RequestID
	}
	for ft, r := range requests {
		rec := st.waitStatus(t, wallet, ids[ft], "ready")
		if rec.RecordCount == nil || *rec.RecordCount != r.records || rec.DownloadURL == nil {
			t.Fatalf("%s: %d records, URL %v: %+v", ft, deref(rec.RecordCount), rec.DownloadURL != nil, rec)
		}
		u, err := url.Parse(*rec.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		if lifetime, _ := strconv.ParseInt(u.Query().Get("X-Amz-Expires"), 10, 64); lifetime < 8*3600-120 || lifetime > 8*3600 {
			t.Errorf("%s: the URL lives %d s, want the 8 hours left of the file's window", ft, lifetime)
		}
		rows, err := csv.NewReader(strings.NewReader(string(download(t, *rec.DownloadURL)))).ReadAll()
		if err != nil || int64(len(rows)-1) != r.records {
			t.Fatalf("%s: %v, %d rows, want %d", ft, err, len(rows)-1, r.records)
		}
		col := slices.Index(rows[0], r.column)
		for _, row := range rows[1:] {
			if col < 0 || row[col] != r.want {
				t.Errorf("%s: a row with %s %v, want %s", ft, r.column, row, r.want)
			}
		}
	}

	// kubectl sees the jobs the API lists, under the wallet's label.
	out := c.kubectl(t, "get", "exportjobs", "-n", ns, "-l", v1alpha1.AuthorityLabel+"="+wallet)
	list := st.exports(t, wallet, "")
	t.Logf("kubectl get exportjobs -n %s -l %s=%s\n%s", ns, v1alpha1.AuthorityLabel, wallet, out)
	var api strings.Builder
	for _, r := range list.Records {
		api.WriteString(r.RequestID + " " + r.FileType + " " + r.Status + " " + strconv.FormatInt(*r.RecordCount, 10) + "\n")
	}
	t.Logf("GET /authority/%s/exports\n%s", wallet, api.String())
	for _, r := range list.Records {
		line := lineOf(out, r.RequestID)
		if line == "" || !strings.Contains(line, "Ready") || !strings.Contains(line, r.FileType) {
			t.Errorf("kubectl does not show %s %s Ready:\n%s", r.RequestID, r.FileType, out)
		}
	}

	// The ServiceAccount reaches nothing outside its namespace, and cannot change a job.
	saCfg, err := clientcmd.BuildConfigFromFlags("", saKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := service.KubeJobs(saCfg, "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.List(context.Background(), wallet); !apierrors.IsForbidden(err) {
		t.Errorf("listing another namespace's jobs: %v, want forbidden", err)
	}
	sa, err := client.New(saCfg, client.Options{Scheme: c.scheme})
	if err != nil {
		t.Fatal(err)
	}
	var job v1alpha1.ExportJob
	if err := sa.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ids["trades"]}, &job); err != nil {
		t.Fatal(err)
	}
	job.Spec.Cancel = true
	if err := sa.Update(context.Background(), &job); !apierrors.IsForbidden(err) {
		t.Errorf("updating a job: %v, want forbidden", err)
	}
}

func lineOf(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

// TestStatusOfEveryPhase: the list reads each phase of the operator's jobs, as the API server holds
// them, as the spec's statuses: completedAt, recordCount and errorReason as the status says, and a
// download URL, presigned for the rest of the file's window, only while the job is ready.
func TestStatusOfEveryPhase(t *testing.T) {
	c := cluster(t)
	ns := c.namespace(t)
	jobs, err := service.KubeJobs(c.config, ns)
	if err != nil {
		t.Fatal(err)
	}
	files := miniotest.NewS3(t, c.minio)
	s := kittest.Up(t, kittest.Options{}, service.Service(service.Config{
		MaxUnfinishedExports: 50, Exports: &service.Exports{Jobs: jobs, Files: files}}))
	st := &stack{Stack: s}
	seed(t, st)

	nowT := time.Now()
	readyAt := metav1.NewTime(nowT.Add(-time.Hour).Truncate(time.Second))
	expiresAt := metav1.NewTime(readyAt.Add(8 * time.Hour))
	longAgo := metav1.NewTime(nowT.Add(-10 * time.Hour).Truncate(time.Second))
	key := "exports/" + ns + "/ready.csv"
	if _, err := files.Put(context.Background(), key, strings.NewReader("\"ts\"\n\"1\"\n"), objstore.PutOptions{ContentType: "text/csv"}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		fileType string
		status   v1alpha1.ExportJobStatus
		want     string
		records  *int64
		reason   string
		done     bool
	}{
		{"trades", v1alpha1.ExportJobStatus{}, "pending", nil, "", false},
		{"deposits", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhasePending, Attempts: 1, FailureReason: "source unavailable",
			NextAttemptAt: &readyAt}, "pending", nil, "", false},
		{"rewards", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseRunning, Attempts: 1, Progress: "120 rows", StartedAt: &readyAt},
			"running", nil, "", false},
		{"liquidations", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseReady, RecordCount: 1, Bytes: 10, ObjectKey: key,
			CompletedAt: &readyAt, ReadyAt: &readyAt, ExpiresAt: &expiresAt}, "ready", ptr(int64(1)), "", true},
		{"swap-records", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseFailed, Attempts: 4, FailureReason: "market DOGE not found",
			CompletedAt: &readyAt}, "failed", nil, "market DOGE not found", true},
		{"lp-records", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseCancelled, CompletedAt: &readyAt, Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: "Cancelled", Message: "cancelled by request",
			LastTransitionTime: readyAt}}}, "failed", nil, "the export was cancelled", true},
		{"funding-payments", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseExpired, RecordCount: 7, ObjectKey: key, CompletedAt: &longAgo,
			ReadyAt: &longAgo, ExpiresAt: &metav1.Time{Time: longAgo.Add(8 * time.Hour)}}, "expired", ptr(int64(7)), "", true},
		{"settle-pnl-records", v1alpha1.ExportJobStatus{Phase: v1alpha1.PhaseReady, RecordCount: 3, ObjectKey: key, CompletedAt: &longAgo,
			ReadyAt: &longAgo, ExpiresAt: &metav1.Time{Time: longAgo.Add(8 * time.Hour)}}, "expired", ptr(int64(3)), "", true},
	}
	ids := map[string]string{}
	for _, tc := range cases {
		id := st.createExport(t, wallet, body(tc.fileType, main)).RequestID
		ids[tc.fileType] = id
		if tc.status.Phase == "" {
			continue
		}
		var job v1alpha1.ExportJob
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: id}, &job); err != nil {
			t.Fatal(err)
		}
		job.Status = tc.status
		if err := c.client.Status().Update(context.Background(), &job); err != nil {
			t.Fatalf("%s: set status: %v", tc.fileType, err)
		}
	}
	list := st.exports(t, wallet, "")
	if len(list.Records) != len(cases) {
		t.Fatalf("%d records, want %d", len(list.Records), len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.fileType, func(t *testing.T) {
			var r authority.Record
			for _, rec := range list.Records {
				if rec.RequestID == ids[tc.fileType] {
					r = rec
				}
			}
			if r.Status != tc.want || r.FileType != tc.fileType {
				t.Fatalf("status %q of %s, want %q", r.Status, tc.status.Phase, tc.want)
			}
			if (r.RecordCount == nil) != (tc.records == nil) || (r.RecordCount != nil && *r.RecordCount != *tc.records) {
				t.Errorf("recordCount %v, want %v", deref(r.RecordCount), deref(tc.records))
			}
			if (r.ErrorReason == nil) != (tc.reason == "") || (r.ErrorReason != nil && *r.ErrorReason != tc.reason) {
				t.Errorf("errorReason %v, want %q", r.ErrorReason, tc.reason)
			}
			if (r.CompletedAt != nil) != tc.done {
				t.Errorf("completedAt %v, want set: %v", r.CompletedAt, tc.done)
			}
			if (r.DownloadURL != nil) != (tc.want == "ready") {
				t.Fatalf("downloadUrl %v for %s", r.DownloadURL, tc.want)
			}
			if r.DownloadURL != nil {
				u, _ := url.Parse(*r.DownloadURL)
				left := expiresAt.Unix() - time.Now().Unix()
				if lifetime, _ := strconv.ParseInt(u.Query().Get("X-Amz-Expires"), 10, 64); lifetime < left-5 || lifetime > left+1 {
					t.Errorf("the URL lives %d s, want the %d s left of the window", lifetime, left)
				}
				if got := string(download(t, *r.DownloadURL)); got != "\"ts\"\n\"1\"\n" {
					t.Errorf("downloaded %q", got)
				}
			}
		})
	}
	// Unfinished are the pending and running ones: three, so the limit counts them and no others.
	var unfinished int
	for _, r := range list.Records {
		if r.Status == "pending" || r.Status == "running" {
			unfinished++
		}
	}
	if unfinished != 3 {
		t.Errorf("%d unfinished", unfinished)
	}
	// Pages: 20 at a time, newest first, the token going on where the page ended.
	for i := range 15 {
		st.createExport(t, wallet, fmt.Sprintf(`{"fileType":"trades","from":%d,"to":1796083199,"userPublicKeys":["%s"]}`, 1793491201+i, main))
	}
	first := st.exports(t, wallet, "")
	if len(first.Records) != 20 || first.Meta.NextPage == nil {
		t.Fatalf("first page: %d records, next %v", len(first.Records), first.Meta.NextPage)
	}
	second := st.exports(t, wallet, "?page="+url.QueryEscape(*first.Meta.NextPage))
	if len(second.Records) != 3 || second.Meta.NextPage != nil {
		t.Fatalf("second page: %d records, next %v", len(second.Records), second.Meta.NextPage)
	}
	seen := map[string]bool{}
	all := append(first.Records, second.Records...)
	for i, r := range all {
		if seen[r.RequestID] || (i > 0 && r.CreatedAt > all[i-1].CreatedAt) {
			t.Fatalf("record %d (%s) repeated or out of order", i, r.RequestID)
		}
		seen[r.RequestID] = true
	}
	if rec := st.Get(t, "/authority/"+builder+"/exports?page="+url.QueryEscape(*first.Meta.NextPage)); rec.Code != http.StatusBadRequest {
		t.Errorf("another wallet's token: %d", rec.Code)
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// The cluster's clients are opened by the first request that needs them, not by the declaration (which
// tools/deploy builds without any cluster), and an export bucket that cannot be reached answers 503,
// to be retried, rather than stopping the service.
func TestClusterOpenedOnFirstUse(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	if _, err := service.Service(service.Config{}).Build(kit.Deps{Schema: "authority"}); err != nil {
		t.Fatalf("declaring the service without a cluster: %v", err)
	}
	c := cluster(t)
	t.Setenv("KUBECONFIG", c.admin)
	s := &stack{Stack: kittest.Up(t, kittest.Options{}, service.Service(service.Config{MaxUnfinishedExports: 5,
		Namespace: c.namespace(t), S3: objstore.S3Config{Endpoint: "127.0.0.1:1", Bucket: "nowhere", AccessKey: "k", SecretKey: "s"}}))}
	seed(t, s)
	for _, rec := range []*httptest.ResponseRecorder{s.Get(t, "/authority/"+wallet+"/exports"), s.post(t, "/authority/"+wallet+"/exports", body("trades", main))} {
		if msg, _ := errorMessage(rec.Body.Bytes()); rec.Code != http.StatusServiceUnavailable || msg != "the export bucket is unavailable" {
			t.Errorf("with the bucket away: %d %s", rec.Code, rec.Body)
		}
	}
}
