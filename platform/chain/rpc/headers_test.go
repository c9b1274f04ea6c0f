package rpc_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/rpc"
)

func TestParseHeaders(t *testing.T) {
	tests := []struct {
		name  string
		pairs []string
		want  map[string]string
		bad   bool
	}{
		{"pairs", []string{"x-api-key: abc", "Authorization:Bearer t:1"}, map[string]string{"x-api-key": "abc", "Authorization": "Bearer t:1"}, false},
		{"none", nil, map[string]string{}, false},
		{"no colon", []string{"abcsecret"}, nil, true},
		{"no name", []string{": abcsecret"}, nil, true},
		{"a space in the name", []string{"x api: abcsecret"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := rpc.ParseHeaders(tt.pairs)
			if (err != nil) != tt.bad {
				t.Fatalf("err %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows a value: %v", err)
			}
			if !tt.bad && len(h) != len(tt.want) {
				t.Fatalf("%v, want %v", h, tt.want)
			}
			for k, v := range tt.want {
				if h[k] != v {
					t.Errorf("%s: %q, want %q", k, h[k], v)
				}
			}
		})
	}
}
