package solana_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// goldenCase is a deposit-like transaction: compute budget instructions, a program call whose
// accounts a lookup table partly holds (the payer too, who stays static as a signer), and a key
// used twice with different flags.
func goldenCase() web3Case {
	payer := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	payerKey := pub(payer)
	state, user, vault, ata := key(10), key(20), key(30), key(40)
	program := solana.MustPublicKey(driftProgram)
	c := web3Case{
		Kind:      "v0",
		payer:     payerKey,
		blockhash: [32]byte(key(90)),
		keys:      []ed25519.PrivateKey{payer},
		ixs: []solana.Instruction{
			solana.SetComputeUnitLimit(600_000),
			solana.SetComputeUnitPrice(50_000),
			{ProgramID: program, Data: []byte{0xf2, 0x23, 0xc6, 0x89, 0x52, 0xe1, 0xf2, 0xb6, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, Accounts: []solana.AccountMeta{
				{PublicKey: state},
				{PublicKey: user, IsWritable: true},
				{PublicKey: payerKey, IsSigner: true},
				{PublicKey: vault, IsWritable: true},
				{PublicKey: ata, IsWritable: true},
				{PublicKey: solana.TokenProgramID},
				{PublicKey: state, IsWritable: true},
			}},
		},
		tables: []solana.LookupTable{{Key: key(70), Addresses: []solana.PublicKey{key(1), solana.TokenProgramID, vault, payerKey, program, state}}},
		metas:  []solana.LookupTableMeta{{DeactivationSlot: solana.LookupTableActive, LastExtendedSlot: 1000}},
	}
	return c
}

// goldenTx is web3.js's serialization of goldenCase, signed (tools/sdkdiff/message.js).
const goldenTx = "ASFs/NiZGpx9CP2lYZyLhj3eqkqxdHF2gCqT1SWqDI8WBSYV1VS9uuhNjoXgapVAZyePY4lSi5ySKCEtAIGGfAeAAQACBepKbGPinFIKvvVQexMuxfmVR3auvr57kkIe6mkURtIsFBUWFxgZGhscHR4fICEiIyQlJicoKSorLC0uLzAxMjMoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj9AQUJDREVGRwMGRm/lIRcy/+ytunLDm+e8jOW7xfcSayxDmzpAAAAACVTbvp7JYMmKeik/4hM2lm/hgNFRrkuBeVYfiYVKU/ZaW1xdXl9gYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eQMDAAUCwCcJAAMACQNQwwAAAAAAAAQHBQEABgIHBRPyI8aJUuHytgAAAQAAAAAAAAAAAUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlAgUCAQE="

func TestCompileV0Golden(t *testing.T) {
	c := goldenCase()
	m, err := solana.CompileV0(c.payer, c.blockhash, c.ixs, c.tables)
	if err != nil {
		t.Fatal(err)
	}
	tx := solana.NewTransaction(*m)
	if err := tx.Sign(c.keys...); err != nil {
		t.Fatal(err)
	}
	got, err := tx.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := base64.StdEncoding.DecodeString(goldenTx)
	if !bytes.Equal(got, want) {
		t.Fatalf("got  %x\nwant %x", got, want)
	}
	if err := tx.Verify(); err != nil {
		t.Error(err)
	}
}
