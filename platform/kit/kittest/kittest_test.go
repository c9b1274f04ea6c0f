package kittest_test

import (
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

func TestKeysArePublicKeys(t *testing.T) {
	seen := map[string]bool{}
	for i := range 2000 {
		k := kittest.Key(i)
		if !events.ValidPublicKey(k) {
			t.Fatalf("Key(%d) = %s is not a public key", i, k)
		}
		if seen[k] {
			t.Fatalf("Key(%d) = %s repeats", i, k)
		}
		seen[k] = true
	}
}
