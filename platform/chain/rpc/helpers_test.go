package rpc_test

import (
	"crypto/sha256"
	"encoding/base64"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// testKeys are n distinct keys.
func testKeys(n int) []solana.PublicKey {
	keys := make([]solana.PublicKey, n)
	for i := range keys {
		keys[i] = sha256.Sum256([]byte{byte(i), byte(i >> 8)})
	}
	return keys
}
