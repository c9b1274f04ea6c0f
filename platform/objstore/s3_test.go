package objstore_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
)

func TestS3UploadShape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size      int64
		wantParts string // the ETag suffix of a multipart object; "" for a single PUT
	}{
		{"small body in one request", 1<<20 - 1, ""},
		{"too big for one request", 1 << 20, "-1"},
		{"exact parts", 10 << 20, "-2"},
		{"many parts", 40<<20 + 5, "-9"},
	}
	cfg := srv.Config(miniotest.NewBucket(t))
	cfg.PartSize = objstore.MinPartSize
	store := mustNewS3(t, cfg)
	client := mustMinioClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			key := "exports/" + strings.ReplaceAll(tt.name, " ", "-") + ".csv"
			if n := mustPut(t, store, key, newBody(tt.size, 5), objstore.PutOptions{}); n != tt.size {
				t.Errorf("Put = %d, want %d", n, tt.size)
			}
			oi, err := client.StatObject(context.Background(), cfg.Bucket, key, minio.StatObjectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, suffix, _ := strings.Cut(oi.ETag, "-")
			if suffix != strings.TrimPrefix(tt.wantParts, "-") || oi.Size != tt.size {
				t.Errorf("object size %d ETag %q, want size %d and parts %q", oi.Size, oi.ETag, tt.size, tt.wantParts)
			}
		})
	}
}

func TestNewS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	missing := srv.Config(miniotest.NewBucket(t))
	missing.CreateBucket = false
	if _, err := objstore.NewS3(ctx, missing); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("NewS3 on a missing bucket = %v, want a does-not-exist error", err)
	}

	wrongKey := srv.Config(miniotest.NewBucket(t))
	wrongKey.SecretKey = "wrong-secret"
	if _, err := objstore.NewS3(ctx, wrongKey); err == nil {
		t.Error("NewS3 with a wrong secret succeeded")
	}

	// Stores racing to create one bucket all succeed.
	racing := srv.Config(miniotest.NewBucket(t))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := objstore.NewS3(ctx, racing); err != nil {
				t.Errorf("NewS3 racing to create the bucket: %v", err)
			}
		})
	}
	wg.Wait()

	// A second store on an existing bucket sees the first one's objects.
	cfg := srv.Config(miniotest.NewBucket(t))
	first := mustNewS3(t, cfg)
	mustPut(t, first, "a.csv", strings.NewReader("a"), objstore.PutOptions{})
	cfg.CreateBucket = false
	if info := mustStat(t, mustNewS3(t, cfg), "a.csv"); info.Size != 1 {
		t.Errorf("Stat through a second store = %+v", info)
	}
}

// TestS3PublicURL checks that download URLs point at PublicURL and are signed for its host.
func TestS3PublicURL(t *testing.T) {
	t.Parallel()
	_, port, err := net.SplitHostPort(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config(miniotest.NewBucket(t))
	cfg.PublicURL = "http://localhost:" + port
	store := mustNewS3(t, cfg)
	mustPut(t, store, "exports/p.csv", strings.NewReader("hello"), objstore.PutOptions{})

	raw := mustURL(t, store, "exports/p.csv", time.Now().Add(time.Hour))
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "localhost:"+port {
		t.Errorf("URL host = %q, want localhost:%s", u.Host, port)
	}
	if r := get(t, http.MethodGet, raw); r.status != http.StatusOK || string(r.body) != "hello" {
		t.Errorf("GET = %d %q", r.status, r.body)
	}
}

func TestS3ConfigValidate(t *testing.T) {
	t.Parallel()
	valid := objstore.S3Config{Endpoint: "minio.tidemark:9000", Bucket: "exports", AccessKey: "a", SecretKey: "s"}
	checkValidate(t, valid, []validateCase[objstore.S3Config]{
		{"valid", func(*objstore.S3Config) {}, ""},
		{"all set", func(c *objstore.S3Config) {
			c.Region, c.UseTLS, c.PartSize, c.PublicURL = "eu-west-1", true, 64<<20, "https://files.example.com"
		}, ""},
		{"no endpoint", func(c *objstore.S3Config) { c.Endpoint = "" }, "endpoint is empty"},
		{"endpoint with scheme", func(c *objstore.S3Config) { c.Endpoint = "http://minio:9000" }, "without scheme"},
		{"no bucket", func(c *objstore.S3Config) { c.Bucket = "" }, "bucket"},
		{"bad bucket", func(c *objstore.S3Config) { c.Bucket = "Exports_2024" }, "bucket"},
		{"no secret", func(c *objstore.S3Config) { c.SecretKey = "" }, "secret key"},
		{"no access key", func(c *objstore.S3Config) { c.AccessKey = "" }, "secret key"},
		{"no keys: the credential chain", func(c *objstore.S3Config) { c.AccessKey, c.SecretKey = "", "" }, ""},
		{"web identity", func(c *objstore.S3Config) {
			c.AccessKey, c.SecretKey = "", ""
			c.WebIdentity = objstore.WebIdentity{TokenFile: "/t", RoleARN: "arn:aws:iam::1:role/r", STSEndpoint: "http://sts:9000", Duration: 9 * time.Hour}
		}, ""},
		{"web identity without role", func(c *objstore.S3Config) { c.WebIdentity.TokenFile = "/t" }, "AWS_ROLE_ARN"},
		{"session too long", func(c *objstore.S3Config) {
			c.WebIdentity = objstore.WebIdentity{TokenFile: "/t", RoleARN: "r", Duration: 13 * time.Hour}
		}, "session duration"},
		{"session too short", func(c *objstore.S3Config) {
			c.WebIdentity = objstore.WebIdentity{TokenFile: "/t", RoleARN: "r", Duration: time.Minute}
		}, "session duration"},
		{"STS endpoint without scheme", func(c *objstore.S3Config) {
			c.WebIdentity = objstore.WebIdentity{TokenFile: "/t", RoleARN: "r", STSEndpoint: "sts:9000"}
		}, "STS endpoint"},
		{"part too small", func(c *objstore.S3Config) { c.PartSize = 1 << 20 }, "part size"},
		{"part too big", func(c *objstore.S3Config) { c.PartSize = 6 << 30 }, "part size"},
		{"public URL with path", func(c *objstore.S3Config) { c.PublicURL = "https://files.example.com/s3" }, "public URL"},
		{"public URL without scheme", func(c *objstore.S3Config) { c.PublicURL = "files.example.com" }, "public URL"},
	})
}

func TestS3ConfigRegisterEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    objstore.S3Config
		wantErr string
	}{
		{"empty", nil, objstore.S3Config{}, ""},
		{
			name: "all",
			env: map[string]string{
				"TIDEMARK_S3_ENDPOINT": "minio:9000", "TIDEMARK_S3_BUCKET": "exports", "TIDEMARK_S3_REGION": "eu-west-1",
				"TIDEMARK_S3_ACCESS_KEY": "ak", "TIDEMARK_S3_SECRET_KEY": "sk\n", "TIDEMARK_S3_TLS": "true",
				"TIDEMARK_S3_PART_SIZE": "33554432", "TIDEMARK_S3_PUBLIC_URL": "https://files.example.com",
				"TIDEMARK_S3_STS_ENDPOINT": "https://sts.example.com", "TIDEMARK_S3_SESSION_DURATION": "9h",
				"AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/token", "AWS_ROLE_ARN": "arn:aws:iam::1:role/exports",
				"AWS_ENDPOINT_URL_STS": "https://ignored.example.com", "OTHER_S3_BUCKET": "ignored",
			},
			want: objstore.S3Config{
				Endpoint: "minio:9000", Bucket: "exports", Region: "eu-west-1", AccessKey: "ak", SecretKey: "sk",
				UseTLS: true, PartSize: 32 << 20, PublicURL: "https://files.example.com",
				WebIdentity: objstore.WebIdentity{TokenFile: "/var/run/secrets/token", RoleARN: "arn:aws:iam::1:role/exports",
					STSEndpoint: "https://sts.example.com", Duration: 9 * time.Hour},
			},
		},
		{
			name: "the SDKs' STS endpoint",
			env:  map[string]string{"AWS_ENDPOINT_URL_STS": "https://sts.example.com"},
			want: objstore.S3Config{WebIdentity: objstore.WebIdentity{STSEndpoint: "https://sts.example.com"}},
		},
		{"bad TLS", map[string]string{"TIDEMARK_S3_TLS": "yes"}, objstore.S3Config{}, "TIDEMARK_S3_TLS"},
		{"bad part size", map[string]string{"TIDEMARK_S3_PART_SIZE": "16MiB"}, objstore.S3Config{}, "TIDEMARK_S3_PART_SIZE"},
		{"bad session duration", map[string]string{"TIDEMARK_S3_SESSION_DURATION": "9"}, objstore.S3Config{}, "TIDEMARK_S3_SESSION_DURATION"},
	}
	for _, tt := range tests {
		env := &app.Env{Prefix: "TIDEMARK_", Lookup: func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }}
		var got objstore.S3Config
		got.RegisterEnv(env)
		err := env.Err()
		if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error = %v, want containing %q", tt.name, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("%s: config = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestS3CredentialChain: with no keys in the config, the store takes them where the cloud's SDKs
// do, here from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and writes, reads and presigns with
// them; a key the server does not know fails NewS3 naming the chain.
func TestS3CredentialChain(t *testing.T) {
	cfg := srv.Config(miniotest.NewBucket(t))
	cfg.AccessKey, cfg.SecretKey = "", ""
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	store := mustNewS3(t, cfg)
	mustPut(t, store, "exports/chain.csv", strings.NewReader("chain"), objstore.PutOptions{})
	if r := get(t, http.MethodGet, mustURL(t, store, "exports/chain.csv", time.Now().Add(time.Hour))); r.status != http.StatusOK || string(r.body) != "chain" {
		t.Errorf("GET = %d %q", r.status, r.body)
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	_, err := objstore.NewS3(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "credential chain") {
		t.Errorf("a secret the server does not know: %v, want refused naming the credential chain", err)
	}
}
