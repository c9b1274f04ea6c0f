package solana_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

const driftProgram = "dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH"

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

func TestFindProgramAddress(t *testing.T) {
	// Mainnet addresses of the Drift program's accounts, as its SDK (sdk/src/addresses/pda.ts)
	// derives them and as they appear on chain.
	program := solana.MustPublicKey(driftProgram)
	cases := []struct {
		name  string
		seeds [][]byte
		want  string
	}{
		{"state", [][]byte{[]byte("drift_state")}, "5zpq7DvB6UdFFvpmBPspGPNfUGoBRRCE2HHg5u3gxcsN"},
		{"signer", [][]byte{[]byte("drift_signer")}, "JCNCMFXo5M5qwUPg2Utu1u6YWp3MbygxqBsBeXXJfrw"},
		{"spot market 0", [][]byte{[]byte("spot_market"), u16(0)}, "6gMq3mRCKf8aP3ttTyYhuijVZ2LGi14oDsBbkgubfLB3"},
		{"spot market vault 0", [][]byte{[]byte("spot_market_vault"), u16(0)}, "GXWqPpjQpdz7KZw9p7f5PX2eGxHAhvpNXiviFkAB8zXg"},
		{"perp market 0", [][]byte{[]byte("perp_market"), u16(0)}, "8UJgxaiQx5nTrdDgph5FiahMmzduuLTLf5WmsPegYA6W"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, bump, err := solana.FindProgramAddress(c.seeds, program)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
			again, err := solana.CreateProgramAddress(append(c.seeds, []byte{bump}), program)
			if err != nil || again != got {
				t.Errorf("CreateProgramAddress with bump %d = %s, %v", bump, again, err)
			}
			if solana.IsOnCurve(got) {
				t.Error("a PDA is on the curve")
			}
		})
	}
}

func TestCreateProgramAddressRefuses(t *testing.T) {
	program := solana.MustPublicKey(driftProgram)
	long := make([]byte, solana.MaxSeedLen+1)
	if _, err := solana.CreateProgramAddress([][]byte{long}, program); err == nil {
		t.Error("a 33-byte seed was accepted")
	}
	if _, err := solana.CreateProgramAddress(make([][]byte, solana.MaxSeeds+1), program); err == nil {
		t.Error("17 seeds were accepted")
	}
	if _, _, err := solana.FindProgramAddress(make([][]byte, solana.MaxSeeds), program); err == nil {
		t.Error("16 seeds and a bump were accepted")
	}
	// Some bump of these seeds lands on the curve: the runtime refuses it, so must we.
	onCurve := 0
	for bump := range 256 {
		_, err := solana.CreateProgramAddress([][]byte{[]byte("drift_state"), {byte(bump)}}, program)
		if errors.Is(err, solana.ErrOnCurve) {
			onCurve++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if onCurve == 0 || onCurve == 256 {
		t.Errorf("%d of 256 bumps on the curve, want about half", onCurve)
	}
}

func TestIsOnCurve(t *testing.T) {
	// Real ed25519 public keys are on the curve; the program id is one.
	for i := range 64 {
		seed := sha256.Sum256([]byte{byte(i)})
		pub := ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)
		if !solana.IsOnCurve(solana.PublicKey(pub)) {
			t.Errorf("ed25519 key %x is off the curve", pub)
		}
	}
	cases := []struct {
		name string
		key  solana.PublicKey
		want bool
	}{
		{"program id", solana.MustPublicKey(driftProgram), true},
		{"zero (y = 0: x^2 = 1)", solana.PublicKey{}, true},
		{"y = 1 (the identity)", solana.PublicKey{1}, true},
		// y = 2: x^2 = 3/(4d+1), not a square.
		{"y = 2", solana.PublicKey{2}, false},
		// y = p (non-canonical) is y = 0 to dalek, so on the curve.
		{"y = p", solana.PublicKey{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, true},
		{"sign bit set on y = 1", solana.PublicKey{1, 31: 0x80}, true},
	}
	for _, c := range cases {
		if got := solana.IsOnCurve(c.key); got != c.want {
			t.Errorf("%s: IsOnCurve = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPublicKeyText(t *testing.T) {
	k := solana.MustPublicKey(driftProgram)
	b, err := k.MarshalText()
	if err != nil || string(b) != driftProgram {
		t.Fatalf("MarshalText = %s, %v", b, err)
	}
	var back solana.PublicKey
	if err := back.UnmarshalText(b); err != nil || back != k {
		t.Fatalf("UnmarshalText = %s, %v", back, err)
	}
	for _, bad := range []string{"", "1", "dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UHH", "0RiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH"} {
		if _, err := solana.ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) succeeded", bad)
		}
	}
}
