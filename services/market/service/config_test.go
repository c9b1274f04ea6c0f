package service_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/services/market"
	"github.com/tidemark/tidemark/services/market/service"
)

// TestHotTextSetting: TIDEMARK_MARKET_HOT_TEXT_MIB is read in MiB, 0 keeps no candle JSON, unset is
// the default budget, and a value out of range is refused, named.
func TestHotTextSetting(t *testing.T) {
	tests := []struct {
		env     string // "": unset
		want    int64
		wantErr string
	}{
		{"", market.DefaultTextBudget, ""},
		{"16", 16 << 20, ""},
		{"0", -1, ""},
		{"5000", 0, "TIDEMARK_MARKET_HOT_TEXT_MIB must be 0..4096"},
		{"lots", 0, "TIDEMARK_MARKET_HOT_TEXT_MIB"},
	}
	for _, tt := range tests {
		env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(name string) (string, bool) {
			if name == "TIDEMARK_MARKET_HOT_TEXT_MIB" && tt.env != "" {
				return tt.env, true
			}
			return "", false
		}}
		var cfg service.Config
		cfg.RegisterEnv(env)
		err := env.Err()
		if err == nil {
			cfg.SetDefaults()
			err = cfg.Validate()
		}
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: error %v, want one saying %q", tt.env, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%q: %v", tt.env, err)
		case cfg.HotText != tt.want:
			t.Errorf("%q: HotText %d, want %d", tt.env, cfg.HotText, tt.want)
		}
	}
}
