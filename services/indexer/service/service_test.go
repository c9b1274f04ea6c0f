package service

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/rpc"
)

func TestConfigRefusesWhatCannotWork(t *testing.T) {
	ok := func() Config {
		c := Config{RPC: rpc.Endpoint{URL: "https://rpc.example.org/?key=1", Headers: []string{"x-api-key: abc"}}}
		c.SetDefaults()
		return c
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" when valid
	}{
		{name: "valid", edit: func(*Config) {}},
		{name: "no endpoint", edit: func(c *Config) { c.RPC.URL = "" }, want: "TIDEMARK_INDEXER_RPC_URL"},
		{name: "not http", edit: func(c *Config) { c.RPC.URL = "wss://rpc.example.org" }, want: "TIDEMARK_INDEXER_RPC_URL"},
		{name: "a header without a colon", edit: func(c *Config) { c.RPC.Headers = []string{"x-api-key abc"} }, want: "TIDEMARK_INDEXER_RPC_HEADERS"},
		{name: "a negative rate", edit: func(c *Config) { c.RPC.Rate = -1 }, want: "TIDEMARK_INDEXER_RPC_RATE"},
		{name: "too many in flight", edit: func(c *Config) { c.InFlight = 1000 }, want: "TIDEMARK_INDEXER_IN_FLIGHT"},
		{name: "a span getBlocks refuses", edit: func(c *Config) { c.Span = 600_000 }, want: "TIDEMARK_INDEXER_SPAN"},
		{name: "accounts read too often", edit: func(c *Config) { c.Accounts = time.Millisecond }, want: "TIDEMARK_INDEXER_ACCOUNTS_INTERVAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err %v, want one naming %s", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "abc") {
				t.Errorf("the error shows a header's value: %v", err)
			}
		})
	}
}
