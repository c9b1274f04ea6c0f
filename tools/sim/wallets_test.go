package sim_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

// TestWalletsAreKeys: every simulated authority and delegate is the public key of an ed25519 key the
// simulator derives from its seed, the same for the same seed, so that their requests can be signed.
func TestWalletsAreKeys(t *testing.T) {
	cfg := sim.Config{Seed: 7, Authorities: 60}
	s, again := sim.New(cfg), sim.New(cfg)
	wallets := map[string]bool{}
	delegates := 0
	for _, a := range s.Accounts() {
		wallets[a.Authority] = true
		if a.Delegate != "" {
			wallets[a.Delegate] = true
			delegates++
		}
	}
	if len(s.Authorities()) != 60 || delegates == 0 {
		t.Fatalf("%d authorities, %d accounts with a delegate", len(s.Authorities()), delegates)
	}
	for addr := range wallets {
		key, ok := s.WalletKey(addr)
		if !ok {
			t.Fatalf("no key for wallet %s", addr)
		}
		pub, ok := events.PublicKey(addr)
		if !ok || !ed25519.Verify(pub[:], []byte("m"), ed25519.Sign(key, []byte("m"))) {
			t.Fatalf("wallet %s is not its key's public key", addr)
		}
		if k2, _ := again.WalletKey(addr); !k2.Equal(key) {
			t.Fatalf("wallet %s has another key with the same seed", addr)
		}
	}
	if _, ok := s.WalletKey(s.Accounts()[0].User); ok {
		t.Error("an account (not a wallet) has a key")
	}
}
