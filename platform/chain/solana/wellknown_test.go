package solana_test

import (
	"bytes"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

func TestAssociatedTokenAddress(t *testing.T) {
	// Values from spl-token's getAssociatedTokenAddressSync (allowOwnerOffCurve set: both
	// owners here are PDAs).
	usdc := solana.MustPublicKey("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v")
	cases := []struct {
		name         string
		owner        string
		tokenProgram solana.PublicKey
		want         string
	}{
		{"token", "5zpq7DvB6UdFFvpmBPspGPNfUGoBRRCE2HHg5u3gxcsN", solana.TokenProgramID, "FC6Z7hQHWMEaniBW2av9qC4B5iGsiWggHjRbDxyA6xKs"},
		{"token-2022", driftProgram, solana.Token2022ProgramID, "GSxNhKaNkwSgWshBPt8oM8f4SKigraTMRTZNhj5KWB15"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := solana.AssociatedTokenAddress(solana.MustPublicKey(c.owner), usdc, c.tokenProgram)
			if got.String() != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestComputeBudget(t *testing.T) {
	// Data as web3.js ComputeBudgetProgram.setComputeUnitLimit / setComputeUnitPrice write it.
	cases := []struct {
		name string
		ix   solana.Instruction
		want []byte
	}{
		{"limit", solana.SetComputeUnitLimit(1_400_000), []byte{0x02, 0xc0, 0x5c, 0x15, 0x00}},
		{"price", solana.SetComputeUnitPrice(50_000), []byte{0x03, 0x50, 0xc3, 0, 0, 0, 0, 0, 0}},
		{"price max", solana.SetComputeUnitPrice(^uint64(0)), []byte{0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.ix.ProgramID != solana.ComputeBudgetProgramID {
				t.Errorf("program %s", c.ix.ProgramID)
			}
			if len(c.ix.Accounts) != 0 {
				t.Errorf("%d accounts, want none", len(c.ix.Accounts))
			}
			if !bytes.Equal(c.ix.Data, c.want) {
				t.Errorf("data %x, want %x", c.ix.Data, c.want)
			}
		})
	}
}
