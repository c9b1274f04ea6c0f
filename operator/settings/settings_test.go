package settings_test

import (
	"slices"
	"testing"

	"github.com/tidemark/tidemark/operator/settings"
	"github.com/tidemark/tidemark/platform/app"
)

func TestVariablesListsEverySetting(t *testing.T) {
	var names []string
	for _, v := range settings.Variables() {
		names = append(names, v.Name)
	}
	for _, want := range []string{"TIDEMARK_LOG_LEVEL", "TIDEMARK_INTERNAL_ADDR", "TIDEMARK_NAMESPACE", "TIDEMARK_LEADER_ELECT",
		"TIDEMARK_EXPORT_MAX_CONCURRENT", "TIDEMARK_EXPORT_SOURCES", "TIDEMARK_S3_ENDPOINT", "TIDEMARK_S3_BUCKET",
		"TIDEMARK_S3_REGION", "TIDEMARK_S3_ACCESS_KEY", "TIDEMARK_S3_SECRET_KEY", "TIDEMARK_S3_TLS",
		"TIDEMARK_S3_PART_SIZE", "TIDEMARK_S3_PUBLIC_URL"} {
		if !slices.Contains(names, want) {
			t.Errorf("Variables lacks %s: %v", want, names)
		}
	}
}

func TestLoad(t *testing.T) {
	vars := map[string]string{
		"POD_NAMESPACE": "exports", "TIDEMARK_LEADER_ELECT": "false", "TIDEMARK_EXPORT_MAX_CONCURRENT": "2",
		"TIDEMARK_EXPORT_SOURCES": "funding-rates=http://market:9090", "TIDEMARK_S3_BUCKET": "b", "TIDEMARK_S3_TLS": "true",
	}
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	s, err := settings.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	if s.Namespace != "exports" || s.LeaderElect || s.MaxConcurrent != 2 || s.InternalAddr != ":9090" ||
		s.Sources["funding-rates"] != "http://market:9090" || s.S3.Bucket != "b" || !s.S3.UseTLS {
		t.Errorf("Load = %+v", s)
	}
}
