// Command notifysign signs one request to the notifications group and sends it: the three headers
// (x-wallet-address, x-signature, x-signed-message) of a wallet's key, a fresh message each time.
//
//	notifysign -wallet 0 /notifications                      the first wallet of make run's simulator
//	notifysign -wallet 0 -X PUT -d '{"pushOptOutTypes":["RECORD_UPDATE"]}' /notifications/preferences
//	notifysign -key-file ~/.config/solana/id.json /notifications/devices
//	notifysign -wallet <delegate> -delegate-for <account> /notifications
//	notifysign -list 5                                       wallets of the simulator, their accounts and delegates
//	notifysign -wallet 0 -headers /notifications             print the headers (for curl) instead of sending
//
// The key is a simulated wallet (-wallet: an index or an address of the simulator of -seed, as make
// run's), a base58 secret key (-key: the 64-byte keypair Solana wallets export, or a 32-byte seed), or
// a Solana keypair file (-key-file: a JSON array of 64 bytes).
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/notify"
	"github.com/tidemark/tidemark/tools/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, http.DefaultClient, time.Now)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "notifysign:", err)
		}
		os.Exit(2)
	}
	os.Exit(code)
}

// run parses args, signs and sends the request, and writes the answer's body to stdout and its
// status to stderr. The exit code is 0 for a 2xx answer, 1 otherwise.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, client *http.Client, now func() time.Time) (int, error) {
	fs := flag.NewFlagSet("notifysign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: notifysign [flags] PATH   (PATH such as /notifications?status=READ)")
		fs.PrintDefaults()
	}
	base := fs.String("url", envOr("TIDEMARK_URL", "http://localhost:8080"), "base URL of the mesh (TIDEMARK_URL)")
	walletFlag := fs.String("wallet", "", "a simulated wallet: its index among the simulator's wallets, or its address")
	seed := fs.Int64("seed", sim.DefaultConfig().Seed, "the simulator's seed (make run's is 1)")
	authorities := fs.Int("authorities", sim.DefaultConfig().Authorities, "the simulator's number of wallets (make run's is 300)")
	keyFlag := fs.String("key", "", "a base58 secret key: a 64-byte keypair or a 32-byte seed")
	keyFile := fs.String("key-file", "", "a Solana keypair file: a JSON array of 64 bytes")
	delegateFor := fs.String("delegate-for", "", "sign as the delegate of this account (isDelegate, serviceUserAccount)")
	method := fs.String("X", http.MethodGet, "the request's method")
	body := fs.String("d", "", "the request's body (JSON)")
	b64 := fs.Bool("base64", false, "write the signature in base64 instead of base58")
	headersOnly := fs.Bool("headers", false, "print the signed headers as curl -H arguments instead of sending")
	list := fs.Int("list", 0, "print this many of the simulator's wallets with their accounts and delegates, and exit")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	simulator := func() *sim.Simulator {
		cfg := sim.DefaultConfig()
		cfg.Seed, cfg.Authorities = *seed, *authorities
		return sim.New(cfg)
	}
	if *list > 0 {
		listWallets(stdout, simulator(), *list)
		return 0, nil
	}
	if fs.NArg() != 1 || !strings.HasPrefix(fs.Arg(0), "/") {
		fs.Usage()
		return 2, errors.New("want one PATH starting with /")
	}
	key, err := loadKey(*walletFlag, *keyFlag, *keyFile, simulator)
	if err != nil {
		return 2, err
	}
	m := notify.Message{Action: notify.ActionNotifications, Ts: float64(now().UnixMilli()) / 1000}
	if *delegateFor != "" {
		m.IsDelegate, m.ServiceUserAccount = true, *delegateFor
	}
	enc := notify.Base58
	if *b64 {
		enc = notify.Base64
	}
	hdr, err := notify.Sign(key, m, enc)
	if err != nil {
		return 2, err
	}
	if *headersOnly {
		for _, h := range [][2]string{{notify.HeaderWallet, hdr.Wallet}, {notify.HeaderSignature, hdr.Signature}, {notify.HeaderMessage, hdr.Message}} {
			fmt.Fprintf(stdout, "-H '%s: %s' ", h[0], h[1])
		}
		fmt.Fprintln(stdout)
		return 0, nil
	}
	var reqBody io.Reader
	if *body != "" {
		reqBody = strings.NewReader(*body)
	}
	req, err := http.NewRequestWithContext(ctx, strings.ToUpper(*method), strings.TrimRight(*base, "/")+fs.Arg(0), reqBody)
	if err != nil {
		return 2, err
	}
	if *body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hdr.Set(req.Header)
	resp, err := client.Do(req)
	if err != nil {
		return 2, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 2, fmt.Errorf("read the answer: %w", err)
	}
	fmt.Fprintf(stderr, "%s %s as %s: %s\n", req.Method, req.URL.RequestURI(), hdr.Wallet, resp.Status)
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") == nil {
		raw = pretty.Bytes()
	}
	fmt.Fprintf(stdout, "%s\n", raw)
	if resp.StatusCode >= 300 {
		return 1, nil
	}
	return 0, nil
}

// loadKey reads the one key source given.
func loadKey(wallet, key, file string, simulator func() *sim.Simulator) (ed25519.PrivateKey, error) {
	given := 0
	for _, s := range []string{wallet, key, file} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return nil, errors.New("give exactly one of -wallet, -key and -key-file")
	}
	switch {
	case wallet != "":
		s := simulator()
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
	case key != "":
		return keyOf(events.DecodeBase58, key)
	default:
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var b []byte
		var nums []int
		if err := json.Unmarshal(raw, &nums); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array of bytes: %w", file, err)
		}
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
}

// keyOf decodes a base58 keypair (64 bytes) or seed (32 bytes).
func keyOf(decode func(string, int) ([]byte, bool), s string) (ed25519.PrivateKey, error) {
	if b, ok := decode(s, ed25519.PrivateKeySize); ok {
		return checked(b)
	}
	if b, ok := decode(s, ed25519.SeedSize); ok {
		return ed25519.NewKeyFromSeed(b), nil
	}
	return nil, errors.New("-key is neither a base58 keypair (64 bytes) nor a base58 seed (32 bytes)")
}

// checked is a keypair whose public half matches its seed.
func checked(b []byte) (ed25519.PrivateKey, error) {
	k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
	if !bytes.Equal(k, b) {
		return nil, errors.New("the keypair's public key does not match its secret")
	}
	return k, nil
}

func listWallets(w io.Writer, s *sim.Simulator, n int) {
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
