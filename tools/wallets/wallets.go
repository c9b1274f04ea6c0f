// Package wallets gives the command-line tools a wallet's key the way a user has one: a wallet of
// the simulator that `make run` runs (by index or address), a base58 secret key, or a Solana
// keypair file; and the flags that choose it.
package wallets

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

// Flags are the key flags of a command: exactly one of -wallet, -key and -key-file, and the
// simulator whose wallets -wallet names.
type Flags struct {
	wallet, key, file *string
	seed              *int64
	authorities       *int
}

// Register adds the flags to fs.
func Register(fs *flag.FlagSet) *Flags {
	return &Flags{
		wallet:      fs.String("wallet", "", "a simulated wallet: its index among the simulator's wallets, or its address"),
		seed:        fs.Int64("seed", sim.DefaultConfig().Seed, "the simulator's seed (make run's is 1)"),
		authorities: fs.Int("authorities", sim.DefaultConfig().Authorities, "the simulator's number of wallets (make run's is 300)"),
		key:         fs.String("key", "", "a base58 secret key: a 64-byte keypair or a 32-byte seed"),
		file:        fs.String("key-file", "", "a Solana keypair file: a JSON array of 64 bytes"),
	}
}

// Simulator is the simulator the flags name, whose wallets -wallet picks from.
func (f *Flags) Simulator() *sim.Simulator {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Authorities = *f.seed, *f.authorities
	return sim.New(cfg)
}

// Key reads the one key source given.
func (f *Flags) Key() (ed25519.PrivateKey, error) {
	given := 0
	for _, s := range []string{*f.wallet, *f.key, *f.file} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("give exactly one of -wallet, -key and -key-file")
	}
	switch {
	case *f.wallet != "":
		s := f.Simulator()
		wallet := *f.wallet
		if i, err := strconv.Atoi(wallet); err == nil {
			all := s.Authorities()
			if i < 0 || i >= len(all) {
				return nil, fmt.Errorf("-wallet %d: the simulator has wallets 0..%d", i, len(all)-1)
			}
			wallet = all[i]
		}
		k, ok := s.WalletKey(wallet)
		if !ok {
			return nil, fmt.Errorf("-wallet %s is no wallet of the simulator of seed %d", wallet, s.Config().Seed)
		}
		return k, nil
	case *f.key != "":
		return keyOf(*f.key)
	default:
		return keyFile(*f.file)
	}
}

// keyOf decodes a base58 keypair (64 bytes) or seed (32 bytes).
func keyOf(s string) (ed25519.PrivateKey, error) {
	if b, ok := events.DecodeBase58(s, ed25519.PrivateKeySize); ok {
		return checked(b)
	}
	if b, ok := events.DecodeBase58(s, ed25519.SeedSize); ok {
		return ed25519.NewKeyFromSeed(b), nil
	}
	return nil, errors.New("-key is neither a base58 keypair (64 bytes) nor a base58 seed (32 bytes)")
}

// keyFile reads a Solana keypair file.
func keyFile(file string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var nums []int
	if err := json.Unmarshal(raw, &nums); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of bytes: %w", file, err)
	}
	b := make([]byte, 0, len(nums))
	for _, n := range nums {
		if n < 0 || n > 255 {
			return nil, fmt.Errorf("%s: %d is not a byte", file, n)
		}
		b = append(b, byte(n))
	}
	if len(b) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%s: %d bytes, want a 64-byte keypair", file, len(b))
	}
	return checked(b)
}

// checked is a keypair whose public half matches its seed.
func checked(b []byte) (ed25519.PrivateKey, error) {
	k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
	if !bytes.Equal(k, b) {
		return nil, errors.New("the keypair's public key does not match its secret")
	}
	return k, nil
}

// List prints n of the simulator's wallets with their accounts and delegates.
func List(w io.Writer, s *sim.Simulator, n int) {
	byAuthority := map[string][]sim.Account{}
	for _, a := range s.Accounts() {
		byAuthority[a.Authority] = append(byAuthority[a.Authority], a)
	}
	for i, auth := range s.Authorities() {
		if i >= n {
			break
		}
		fmt.Fprintf(w, "%d  %s\n", i, auth)
		for _, a := range byAuthority[auth] {
			line := fmt.Sprintf("     account %s (%s)", a.User, a.Name)
			if a.Delegate != "" {
				line += "  delegate " + a.Delegate
			}
			fmt.Fprintln(w, line)
		}
	}
}

// EnvOr is the environment's value of name, or def.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
