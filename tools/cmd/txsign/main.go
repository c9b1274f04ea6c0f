// Command txsign signs a transaction the /tx routes built and submits it through /tx/execute: the
// client's half of the BETA transaction routes, with a simulated wallet's key or your own.
//
//	curl -s -XPOST localhost:8080/tx/deposit -d '{"accountId":"...","amount":"10","symbol":"USDC"}' | txsign -wallet 0
//	txsign -wallet <address> AAEC...            the base64 of an unsigned transaction
//	txsign -key-file ~/.config/solana/id.json -simulate -
//	txsign -wallet 0 -print -                    print the signed transaction instead of sending it
//
// The input (an argument, or standard input when it is "-" or absent) is a builder route's JSON
// answer or the base64 of the transaction itself. The key must be one of the transaction's
// signers; the others' signatures are left as they are.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
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

	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/tools/wallets"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, http.DefaultClient)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "txsign:", err)
	}
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, client *http.Client) (int, error) {
	fs := flag.NewFlagSet("txsign", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: txsign [flags] [TX]   (TX: a /tx route's answer or a base64 transaction; - or none: standard input)")
		fs.PrintDefaults()
	}
	base := fs.String("url", wallets.EnvOr("TIDEMARK_URL", "http://localhost:8080"), "base URL of the mesh (TIDEMARK_URL)")
	keys := wallets.Register(fs)
	simulate := fs.Bool("simulate", false, "ask /tx/execute to simulate the transaction before it sends it")
	printOnly := fs.Bool("print", false, "print the signed transaction (base64) instead of sending it")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2, errors.New("want at most one TX")
	}
	in := fs.Arg(0)
	if in == "" || in == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return 2, fmt.Errorf("read standard input: %w", err)
		}
		in = string(b)
	}
	raw, err := transaction(in)
	if err != nil {
		return 2, err
	}
	key, err := keys.Key()
	if err != nil {
		return 2, err
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		return 2, fmt.Errorf("the input is no transaction: %w", err)
	}
	if err := tx.Sign(key); err != nil {
		return 2, err
	}
	signed, err := tx.MarshalBinary()
	if err != nil {
		return 2, err
	}
	signedB64 := base64.StdEncoding.EncodeToString(signed)
	if *printOnly {
		fmt.Fprintln(stdout, signedB64)
		return 0, nil
	}
	body, err := json.Marshal(map[string]any{"signedTx": signedB64, "simulate": *simulate})
	if err != nil {
		return 2, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*base, "/")+"/tx/execute", bytes.NewReader(body))
	if err != nil {
		return 2, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 2, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 2, fmt.Errorf("read the answer: %w", err)
	}
	fmt.Fprintf(stderr, "POST /tx/execute of %s: %s\n", tx.Signature(), resp.Status)
	var pretty bytes.Buffer
	if json.Indent(&pretty, answer, "", "  ") == nil {
		answer = pretty.Bytes()
	}
	fmt.Fprintf(stdout, "%s\n", answer)
	if resp.StatusCode >= 300 {
		return 1, nil
	}
	return 0, nil
}

// transaction is the transaction's bytes in a builder route's answer or in base64 text.
func transaction(in string) ([]byte, error) {
	in = strings.TrimSpace(in)
	if strings.HasPrefix(in, "{") {
		var a struct {
			Success bool    `json:"success"`
			Tx      *string `json:"tx"`
			Message string  `json:"message"`
		}
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			return nil, fmt.Errorf("the input is no /tx answer: %w", err)
		}
		if !a.Success || a.Tx == nil {
			return nil, fmt.Errorf("the /tx route built no transaction: %s", a.Message)
		}
		in = *a.Tx
	}
	raw, err := base64.StdEncoding.DecodeString(in)
	if err != nil {
		return nil, fmt.Errorf("the input is neither a /tx answer nor base64: %w", err)
	}
	return raw, nil
}
