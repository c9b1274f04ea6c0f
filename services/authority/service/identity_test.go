package service_test

import (
	"context"
	"encoding/csv"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
	"github.com/tidemark/tidemark/services/authority/service"
	market "github.com/tidemark/tidemark/services/market/service"
	user "github.com/tidemark/tidemark/services/user/service"
)

// exportsAudience is the audience of the tokens the bucket's STS accepts, as a projected service
// account token's audience is set in a pod.
const exportsAudience = "tidemark-exports"

// TestExportsWithWebIdentity runs an export with no static key anywhere: the operator writes the
// file and the service presigns its URL with temporary credentials, each exchanging a token the
// cluster issued to its ServiceAccount at MinIO's STS (AssumeRoleWithWebIdentity). MinIO trusts the
// test bed's kube-apiserver as the OpenID issuer, reading its discovery document and keys, as AWS
// trusts an EKS cluster's issuer for IAM roles for service accounts.
func TestExportsWithWebIdentity(t *testing.T) {
	c := cluster(t)
	ns := c.namespace(t)
	ctx := context.Background()
	sts := c.webIdentitySTS(t)
	bucket := miniotest.NewBucket(t)
	if _, err := objstore.NewS3(ctx, sts.Config(bucket)); err != nil { // the bucket exists before the mesh
		t.Fatal(err)
	}
	role := miniotest.OpenID{ClientID: exportsAudience}.RoleARN()
	webIdentity := func(sa, audience string, session time.Duration) objstore.S3Config {
		cfg := sts.Config(bucket)
		cfg.AccessKey, cfg.SecretKey, cfg.CreateBucket = "", "", false
		cfg.WebIdentity = objstore.WebIdentity{TokenFile: c.serviceAccountToken(t, ns, sa, audience), RoleARN: role,
			STSEndpoint: "http://" + sts.Endpoint, Duration: session}
		return cfg
	}

	// A token for another audience is refused, and the error says where the credentials came from.
	// MinIO answers ready before its IAM has loaded its roles (see below): until then it refuses
	// every token for the role being undefined, which says nothing of the audience.
	var err error
	kittest.Eventually(t, 30*time.Second, "MinIO's IAM to know the role", func() bool {
		_, err = objstore.NewS3(ctx, webIdentity("intruder", "someone-else", 0))
		return err == nil || !strings.Contains(err.Error(), "is not defined")
	})
	if err == nil || !strings.Contains(err.Error(), "web identity (AWS_WEB_IDENTITY_TOKEN_FILE") || !strings.Contains(err.Error(), "claim invalid") {
		t.Fatalf("a token for another audience: %v, want refused for its audience, naming the web identity", err)
	}
	t.Logf("a token for another audience: %v", err)

	// A URL never outlives the session that signs it: with 15-minute sessions, a URL asked for an
	// hour lives at most 15 minutes, and still downloads.
	// MinIO answers ready before its IAM has loaded the built-in policies: until then it refuses a
	// role's policy as undefined.
	var short *objstore.S3
	kittest.Eventually(t, 30*time.Second, "MinIO's IAM to know the role's policy", func() bool {
		short, err = objstore.NewS3(ctx, webIdentity("short", exportsAudience, 15*time.Minute))
		if err != nil && !strings.Contains(err.Error(), "are defined") {
			t.Fatal(err)
		}
		return err == nil
	})
	if _, err := short.Put(ctx, "probe.csv", strings.NewReader("a\n1\n"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := short.URL(ctx, "probe.csv", time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if lifetime := urlLifetime(t, raw); lifetime > 15*60 || lifetime < 14*60 {
		t.Errorf("a URL signed by a 15-minute session lives %d s", lifetime)
	}
	if got := string(download(t, raw)); got != "a\n1\n" {
		t.Errorf("download = %q", got)
	}

	// The mesh: the service in-process, the operator as its Deployment runs it, each with its own
	// ServiceAccount's token and sessions long enough for the contract's 8-hour URLs.
	t.Setenv("KUBECONFIG", c.serviceAccount(t, ns))
	s := kittest.Up(t, kittest.Options{}, market.Service(market.Config{}), user.Service(),
		service.Service(service.Config{MaxUnfinishedExports: 5, Namespace: ns, S3: webIdentity("authority", exportsAudience, 9*time.Hour)}))
	operator := webIdentity("operator", exportsAudience, 9*time.Hour)
	c.startOperatorWith(t, ns, map[v1alpha1.FileType]string{"trades": s.InternalServer(t, "user").URL},
		"TIDEMARK_S3_ENDPOINT="+operator.Endpoint, "TIDEMARK_S3_BUCKET="+bucket,
		"TIDEMARK_S3_STS_ENDPOINT="+operator.WebIdentity.STSEndpoint, "TIDEMARK_S3_SESSION_DURATION=9h",
		"AWS_WEB_IDENTITY_TOKEN_FILE="+operator.WebIdentity.TokenFile, "AWS_ROLE_ARN="+role)
	st := &stack{Stack: s}
	seed(t, st)
	var fills []events.Record
	for i := range 3 {
		f := kittest.Fill(kittest.SOLPerp, at("2026-11-18T09:00:00Z")+int64(i)*60, 100+i, 150_000_000, 1_000_000_000, 150_000_000)
		f.Taker = main
		fills = append(fills, f)
	}
	s.Ingest(t, encode(t, events.TopicFills, fills...)...)

	id := st.createExport(t, wallet, body("trades", main)).RequestID
	rec := st.waitStatus(t, wallet, id, "ready")
	if rec.DownloadURL == nil {
		t.Fatalf("ready without a URL: %+v", rec)
	}
	u, err := url.Parse(*rec.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("X-Amz-Security-Token") == "" || strings.HasPrefix(q.Get("X-Amz-Credential"), sts.AccessKey+"/") {
		t.Errorf("the URL is not signed by a session: %s", u.RawQuery)
	}
	if lifetime := urlLifetime(t, *rec.DownloadURL); lifetime < 8*3600-120 || lifetime > 8*3600 {
		t.Errorf("the URL lives %d s, want the 8 hours left of the file's window", lifetime)
	}
	rows, err := csv.NewReader(strings.NewReader(string(download(t, *rec.DownloadURL)))).ReadAll()
	if err != nil || len(rows) != 4 {
		t.Fatalf("the file: %v, %d rows, want a header and 3", err, len(rows))
	}
}

// webIdentitySTS starts a MinIO whose STS trusts the test bed's kube-apiserver as an OpenID issuer
// of tokens for exportsAudience.
func (c *clusterEnv) webIdentitySTS(t *testing.T) *miniotest.Server {
	t.Helper()
	// The issuer's discovery document and keys are public, as a cloud's cluster publishes them:
	// the STS reads them without credentials.
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "service-account-issuer-discovery-public"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:service-account-issuer-discovery"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"}},
	}
	if err := c.client.Create(context.Background(), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := miniotest.RunWith(ctx, miniotest.Options{OpenID: &miniotest.OpenID{
		ConfigURL: strings.TrimSuffix(c.config.Host, "/") + "/.well-known/openid-configuration",
		ClientID:  exportsAudience,
		CA:        c.config.CAData,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// serviceAccountToken creates the ServiceAccount sa in ns when missing and writes a token the
// cluster issues it for audience to a file, as the kubelet projects one into a pod; it returns the
// file's path.
func (c *clusterEnv) serviceAccountToken(t *testing.T, ns, sa, audience string) string {
	t.Helper()
	ctx := context.Background()
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}
	if err := c.client.Create(ctx, account); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	expiry := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &expiry}}
	if err := c.client.SubResource("token").Create(ctx, account, req); err != nil {
		t.Fatalf("token of %s/%s: %v", ns, sa, err)
	}
	path := filepath.Join(t.TempDir(), sa+"-token")
	if err := os.WriteFile(path, []byte(req.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// urlLifetime is a presigned URL's X-Amz-Expires, in seconds.
func urlLifetime(t *testing.T, raw string) int64 {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(u.Query().Get("X-Amz-Expires"), 10, 64)
	if err != nil {
		t.Fatalf("URL %s: X-Amz-Expires: %v", raw, err)
	}
	return n
}
