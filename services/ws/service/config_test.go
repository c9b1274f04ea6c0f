package service_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/services/ws/service"
)

// TestNotifyURL: TIDEMARK_WS_NOTIFY_URL is read, listed among the edge's variables, and refused,
// named, when it is no http(s) base URL, as the market and stats URLs are.
func TestNotifyURL(t *testing.T) {
	load := func(v string) (service.Config, error) {
		env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(name string) (string, bool) {
			switch name {
			case "TIDEMARK_KAFKA_BROKERS":
				return "localhost:9092", true
			case "TIDEMARK_WS_NOTIFY_URL":
				return v, true
			}
			return "", false
		}}
		_, cfg, err := service.LoadConfiguration(env)
		return cfg, err
	}
	if cfg, err := load("http://notify:9090"); err != nil || cfg.NotifyURL != "http://notify:9090" {
		t.Errorf("NotifyURL %q, %v", cfg.NotifyURL, err)
	}
	if _, err := load("notify:9090"); err == nil || !strings.Contains(err.Error(), "TIDEMARK_WS_NOTIFY_URL") {
		t.Errorf("a URL without a scheme: %v, want an error naming TIDEMARK_WS_NOTIFY_URL", err)
	}
	listed := false
	for _, v := range service.Variables() {
		listed = listed || v.Name == "TIDEMARK_WS_NOTIFY_URL"
	}
	if !listed {
		t.Error("TIDEMARK_WS_NOTIFY_URL is not among the edge's variables")
	}
}
