package app_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/telemetry"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func TestInternalMux(t *testing.T) {
	var dbDown, kafkaDown atomic.Bool
	check := func(down *atomic.Bool, reason string) func() error {
		return func() error {
			if down.Load() {
				return errors.New(reason)
			}
			return nil
		}
	}
	srv := httptest.NewServer(app.InternalMux(telemetry.NewRegistry(),
		check(&dbDown, "postgres: connection refused"), check(&kafkaDown, "consumer not joined")))
	defer srv.Close()

	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}

	tests := []struct {
		name        string
		db, kafka   bool
		wantStatus  int
		wantReasons []string
	}{
		{"all ready", false, false, 200, nil},
		{"one down", true, false, 503, []string{"postgres: connection refused"}},
		{"two down", true, true, 503, []string{"postgres: connection refused", "consumer not joined"}},
		{"recovered", false, false, 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dbDown.Store(tt.db)
			kafkaDown.Store(tt.kafka)
			code, body := get(t, srv.URL+"/readyz")
			if code != tt.wantStatus {
				t.Fatalf("/readyz = %d %s", code, body)
			}
			var got struct {
				Ready   bool     `json:"ready"`
				Reasons []string `json:"reasons"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			if got.Ready != (tt.wantStatus == 200) || strings.Join(got.Reasons, "|") != strings.Join(tt.wantReasons, "|") {
				t.Errorf("/readyz body = %s", body)
			}
		})
	}

	code, body := get(t, srv.URL+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"go_goroutines", "process_open_fds", "promhttp_metric_handler_requests_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
