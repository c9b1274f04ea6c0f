package miniotest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/tidemark/tidemark/platform/objstore/miniotest"
)

func TestRunStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := miniotest.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := "http://" + s.Endpoint + "/minio/health/live"
	resp, err := http.Get(live)
	if err != nil {
		t.Fatalf("health: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("health = %s", resp.Status)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if resp, err := http.Get(live); err == nil {
		resp.Body.Close()
		t.Errorf("server still answers after Stop: %s", resp.Status)
	}
}

func TestRunWithoutBinary(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		wantErr string
	}{
		{"nothing found", "", "make testbed"},
		{"env points nowhere", "/nonexistent/minio", "TIDEMARK_MINIO_BIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Outside the repo and with an empty PATH, only the variable is left to find it.
			t.Chdir(t.TempDir())
			t.Setenv("PATH", "")
			t.Setenv("TIDEMARK_MINIO_BIN", tt.env)
			s, err := miniotest.Run(context.Background())
			if err == nil {
				_ = s.Stop()
				t.Fatal("Run succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Run error = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewBucket(t *testing.T) {
	for _, name := range []string{"short", "A Very_Long/Sub-Test name " + strings.Repeat("x", 80), "--"} {
		t.Run(name, func(t *testing.T) {
			b := miniotest.NewBucket(t)
			if err := s3utils.CheckValidBucketNameStrict(b); err != nil {
				t.Errorf("NewBucket = %q: %v", b, err)
			}
			if b == miniotest.NewBucket(t) {
				t.Errorf("NewBucket twice = %q", b)
			}
		})
	}
}
