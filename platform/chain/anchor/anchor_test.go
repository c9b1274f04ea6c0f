package anchor_test

import (
	"encoding/hex"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/anchor"
)

func TestDiscriminators(t *testing.T) {
	// Instruction values as the protocol's SDK computes them; event and account values are the first
	// bytes of real mainnet data (an OrderActionRecord line, a User dump).
	cases := []struct {
		name string
		got  anchor.Discriminator
		want string
	}{
		{"deposit", anchor.InstructionDiscriminator("deposit"), "f223c68952e1f2b6"},
		{"place_orders", anchor.InstructionDiscriminator("place_orders"), "3c3f327b0cc53cbe"},
		{"settle_multiple_pnls", anchor.InstructionDiscriminator("settle_multiple_pnls"), "7f4275392832987f"},
		{"OrderActionRecord", anchor.EventDiscriminator("OrderActionRecord"), "e0344347c2ed6d01"},
		{"User", anchor.AccountDiscriminator("User"), "9f755fe3ef973aec"},
	}
	for _, c := range cases {
		if got := hex.EncodeToString(c.got[:]); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
