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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/services/notify"
	"github.com/tidemark/tidemark/tools/wallets"
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
	base := fs.String("url", wallets.EnvOr("TIDEMARK_URL", "http://localhost:8080"), "base URL of the mesh (TIDEMARK_URL)")
	keys := wallets.Register(fs)
	delegateFor := fs.String("delegate-for", "", "sign as the delegate of this account (isDelegate, serviceUserAccount)")
	method := fs.String("X", http.MethodGet, "the request's method")
	body := fs.String("d", "", "the request's body (JSON)")
	b64 := fs.Bool("base64", false, "write the signature in base64 instead of base58")
	headersOnly := fs.Bool("headers", false, "print the signed headers as curl -H arguments instead of sending")
	list := fs.Int("list", 0, "print this many of the simulator's wallets with their accounts and delegates, and exit")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if *list > 0 {
		wallets.List(stdout, keys.Simulator(), *list)
		return 0, nil
	}
	if fs.NArg() != 1 || !strings.HasPrefix(fs.Arg(0), "/") {
		fs.Usage()
		return 2, errors.New("want one PATH starting with /")
	}
	key, err := keys.Key()
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
