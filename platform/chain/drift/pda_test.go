package drift_test

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

func TestAddresses(t *testing.T) {
	// Mainnet addresses, as the SDK derives them and as they are on chain.
	cases := []struct {
		name string
		got  func() string
		want string
	}{
		{"state", func() string { return drift.StateAddress().String() }, "5zpq7DvB6UdFFvpmBPspGPNfUGoBRRCE2HHg5u3gxcsN"},
		{"signer", func() string { return drift.SignerAddress().String() }, "JCNCMFXo5M5qwUPg2Utu1u6YWp3MbygxqBsBeXXJfrw"},
		{"perp market 0", func() string { return drift.PerpMarketAddress(0).String() }, "8UJgxaiQx5nTrdDgph5FiahMmzduuLTLf5WmsPegYA6W"},
		{"spot market 0", func() string { return drift.SpotMarketAddress(0).String() }, "6gMq3mRCKf8aP3ttTyYhuijVZ2LGi14oDsBbkgubfLB3"},
		{"spot market vault 0", func() string { return drift.SpotMarketVaultAddress(0).String() }, "GXWqPpjQpdz7KZw9p7f5PX2eGxHAhvpNXiviFkAB8zXg"},
	}
	for _, c := range cases {
		if got := c.got(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// drift-rs names its devnet User dump res/9Jtc.hex after its address; the dump's authority and
	// subaccount 0 give that address.
	dump := solana.MustPublicKey("GiMXQkJXLVjScmQDkoLJShBJpTh9SDPvT2AZQq8NyEBf")
	if got := drift.UserAddress(dump, 0).String(); !strings.HasPrefix(got, "9Jtc") {
		t.Errorf("user of the 9Jtc dump: %s", got)
	}
	var authority [32]byte
	authority[0] = 7
	a, b := drift.UserAddress(authority, 0), drift.UserAddress(authority, 1)
	if a == b || a == drift.UserStatsAddress(authority) {
		t.Error("user addresses collide")
	}
}
