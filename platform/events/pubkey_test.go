package events_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

func TestValidPublicKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"8qbHbw2BbbTHBW1sbeqakYXVKRQM8Ne7pLK7m6CVfeR", true},   // 43 characters
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T", true},  // 44
		{"11111111111111111111111111111111", true},              // the zero key
		{"So11111111111111111111111111111111111111112", true},   // wrapped SOL's mint
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB40", false}, // '0' is not base58
		{"4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4l", false}, // nor 'l'
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", false}, // 44 characters, more than 32 bytes
		{"1111111111111111111111111111111", false},              // 31 zero bytes
		{"2222222222222222222222222222222", false},              // too short
		{"", false},
		{strings.Repeat("A", 100), false},
		{"Acct0000000000000000000000000000000000000001", false},
	}
	for _, tt := range tests {
		if got := events.ValidPublicKey(tt.key); got != tt.want {
			t.Errorf("ValidPublicKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}
