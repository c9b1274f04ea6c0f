package solana_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// mustGolden is goldenCase compiled, and its message.
func mustGolden(tb testing.TB) (web3Case, *solana.Message) {
	tb.Helper()
	c := goldenCase()
	m, err := solana.CompileV0(c.payer, c.blockhash, c.ixs, c.tables)
	if err != nil {
		tb.Fatal(err)
	}
	return c, m
}

// mustMarshal serializes m, unsigned, without the parser's checks.
func mustMarshal(tb testing.TB, m solana.Message) []byte {
	tb.Helper()
	b, err := solana.NewTransaction(m).MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParseTransactionRoundTrip(t *testing.T) {
	c, v0 := mustGolden(t)
	legacy, err := solana.CompileLegacy(c.payer, c.blockhash, c.ixs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*solana.Message{v0, legacy} {
		t.Run(m.Version.String(), func(t *testing.T) {
			tx := solana.NewTransaction(*m)
			if err := tx.Sign(c.keys...); err != nil {
				t.Fatal(err)
			}
			b, err := tx.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if m.Version == solana.Version0 && b[1+solana.SignatureSize] != 0x80 {
				t.Errorf("v0 message starts with %#x", b[1+solana.SignatureSize])
			}
			parsed, err := solana.ParseTransaction(b)
			if err != nil {
				t.Fatal(err)
			}
			if parsed.Message.Version != m.Version || parsed.Signature() != tx.Signature() || parsed.Message.FeePayer() != c.payer {
				t.Errorf("parsed version %s, signature %s, payer %s", parsed.Message.Version, parsed.Signature(), parsed.Message.FeePayer())
			}
			if again, _ := parsed.MarshalBinary(); !bytes.Equal(again, b) {
				t.Errorf("written again\n%x\nwant\n%x", again, b)
			}
			if err := parsed.Verify(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestParseTransactionRefuses(t *testing.T) {
	_, m := mustGolden(t)
	good := mustMarshal(t, *m)
	if _, err := solana.ParseTransaction(good); err != nil {
		t.Fatalf("the unmodified transaction: %v", err)
	}
	msg := good[1+solana.SignatureSize:]
	// with changes a copy of the golden message and serializes it.
	with := func(change func(m *solana.Message)) []byte {
		cp := *m
		cp.Instructions = slices.Clone(m.Instructions)
		cp.AddressTableLookups = slices.Clone(m.AddressTableLookups)
		cp.AccountKeys = slices.Clone(m.AccountKeys)
		change(&cp)
		return mustMarshal(t, cp)
	}
	cases := []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "signature count: truncated"},
		{"short signature", good[:40], "signature 0: truncated"},
		{"no message", good[:1+solana.SignatureSize], "message header: truncated"},
		{"trailing byte", append(slices.Clone(good), 0), "1 bytes after the message"},
		{"fewer signatures than signers", append([]byte{0}, msg...), "0 signatures, the message requires 1"},
		{"more signatures than signers", append(append([]byte{2}, make([]byte, 2*solana.SignatureSize)...), msg...), "2 signatures, the message requires 1"},
		{"signature count not shortest", append([]byte{0x81, 0x00}, good[1:]...), "shortest"},
		{"version 1", append(append([]byte{1}, make([]byte, solana.SignatureSize)...), append([]byte{0x81}, msg[1:]...)...), "version 1 is not supported"},
		{"program is the payer", with(func(m *solana.Message) {
			m.Instructions[0] = solana.CompiledInstruction{ProgramIDIndex: 0}
		}), "program index 0"},
		{"program looked up", with(func(m *solana.Message) {
			m.Instructions[0] = solana.CompiledInstruction{ProgramIDIndex: uint8(len(m.AccountKeys))}
		}), "program index"},
		{"account index out of range", with(func(m *solana.Message) {
			m.Instructions[0] = solana.CompiledInstruction{ProgramIDIndex: 1, Accounts: []uint8{uint8(len(m.AccountKeys) + m.NumLookedUp())}}
		}), "account index"},
		{"payer read-only", with(func(m *solana.Message) { m.Header.NumReadonlySignedAccounts = 1 }), "fee payer must be a writable signer"},
		{"header past the keys", with(func(m *solana.Message) { m.Header.NumReadonlyUnsignedAccounts = uint8(len(m.AccountKeys)) }), "read-only non-signers"},
		{"empty lookup", with(func(m *solana.Message) {
			m.AddressTableLookups = append(m.AddressTableLookups, solana.AddressTableLookup{AccountKey: key(3)})
		}), "takes no account"},
		{"key twice", with(func(m *solana.Message) { m.AccountKeys[2] = m.AccountKeys[1] }), "appears twice"},
		{"too many keys", with(func(m *solana.Message) {
			m.AddressTableLookups = append(m.AddressTableLookups, solana.AddressTableLookup{AccountKey: key(3), ReadonlyIndexes: make([]uint8, 255)})
		}), "account keys, at most 256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := solana.ParseTransaction(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Every cut of a valid transaction is refused.
	for n := range len(good) {
		if _, err := solana.ParseTransaction(good[:n]); err == nil {
			t.Errorf("the first %d of %d bytes parse", n, len(good))
		}
	}
}

func TestVerify(t *testing.T) {
	payer := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	cosigner := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	stranger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, ed25519.SeedSize))
	ix := solana.Instruction{ProgramID: solana.SystemProgramID, Accounts: []solana.AccountMeta{{PublicKey: pub(cosigner), IsSigner: true}}}
	m, err := solana.CompileV0(pub(payer), [32]byte(key(5)), []solana.Instruction{ix}, nil)
	if err != nil {
		t.Fatal(err)
	}
	signed := func(keys ...ed25519.PrivateKey) *solana.Transaction {
		tx := solana.NewTransaction(*m)
		if err := tx.Sign(keys...); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	cases := []struct {
		name string
		tx   *solana.Transaction
		want string // empty: verifies
	}{
		{"both", signed(payer, cosigner), ""},
		{"unsigned", signed(), "signer 0 (" + pub(payer).String() + ") has not signed"},
		{"cosigner missing", signed(payer), "signer 1 (" + pub(cosigner).String() + ") has not signed"},
		{"wrong signature", func() *solana.Transaction {
			tx := signed(payer, cosigner)
			tx.Signatures[1] = tx.Signatures[0]
			return tx
		}(), "signature 1 does not verify for " + pub(cosigner).String()},
		{"message changed", func() *solana.Transaction {
			tx := signed(payer, cosigner)
			tx.Message.RecentBlockhash[0] ^= 1
			return tx
		}(), "signature 0 does not verify"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.tx.Verify()
			if c.want == "" {
				if err != nil {
					t.Error(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	if err := solana.NewTransaction(*m).Sign(stranger); err == nil || !strings.Contains(err.Error(), "not a signer") {
		t.Errorf("signing with a stranger: %v", err)
	}
}

func TestMarshalRefusesTooLarge(t *testing.T) {
	payer := key(1)
	ix := solana.Instruction{ProgramID: solana.SystemProgramID, Data: make([]byte, solana.PacketDataSize)}
	m, err := solana.CompileV0(payer, [32]byte{}, []solana.Instruction{ix}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := solana.NewTransaction(*m).MarshalBinary(); !errors.Is(err, solana.ErrTooLarge) {
		t.Errorf("error %v, want ErrTooLarge", err)
	}
}

func TestCompileV0Keys(t *testing.T) {
	c, m := mustGolden(t)
	// First use order: payer, ComputeBudget, drift, state, user, vault, ata, token program.
	// Static: the payer, the writable non-signers no table holds (user, ata), the programs;
	// looked up: state and vault writable (in that order, not the table's), the token program
	// read-only; the payer stays static although the table holds it.
	drift := solana.MustPublicKey(driftProgram)
	wantStatic := []solana.PublicKey{c.payer, key(20), key(40), solana.ComputeBudgetProgramID, drift}
	if !slices.Equal(m.AccountKeys, wantStatic) {
		t.Errorf("static keys %v, want %v", m.AccountKeys, wantStatic)
	}
	if m.Header != (solana.MessageHeader{NumRequiredSignatures: 1, NumReadonlySignedAccounts: 0, NumReadonlyUnsignedAccounts: 2}) {
		t.Errorf("header %+v", m.Header)
	}
	l := m.AddressTableLookups
	if len(l) != 1 || l[0].AccountKey != key(70) || !slices.Equal(l[0].WritableIndexes, []uint8{5, 2}) || !slices.Equal(l[0].ReadonlyIndexes, []uint8{1}) {
		t.Errorf("lookups %+v", l)
	}
	// state, user, payer, vault, ata, token program, state.
	if ix := m.Instructions[2]; ix.ProgramIDIndex != 4 || !slices.Equal(ix.Accounts, []uint8{5, 1, 0, 6, 2, 7, 5}) {
		t.Errorf("instruction %+v", ix)
	}
	var writable []int
	for i := range len(m.AccountKeys) + m.NumLookedUp() {
		if m.IsWritable(i) {
			writable = append(writable, i)
		}
	}
	if !slices.Equal(writable, []int{0, 1, 2, 5, 6}) || !m.IsSigner(0) || m.IsSigner(1) {
		t.Errorf("writable %v", writable)
	}
}
