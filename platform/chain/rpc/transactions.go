package rpc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/base58"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// Simulation is what simulateTransaction found: Err is the transaction's error as the runtime
// reports it (JSON null when it succeeded: {"InstructionError":[2,{"Custom":6003}]}, or a string
// such as "BlockhashNotFound"), Logs the program logs, UnitsConsumed the compute units it used.
type Simulation struct {
	Err           json.RawMessage `json:"err"`
	Logs          []string        `json:"logs"`
	UnitsConsumed uint64          `json:"unitsConsumed"`
}

// Failed reports whether the simulated transaction failed.
func (s *Simulation) Failed() bool { return len(s.Err) > 0 && string(s.Err) != "null" }

// SimulateOptions are simulateTransaction's settings.
type SimulateOptions struct {
	Commitment Commitment
	// SigVerify checks the signatures too; an unsigned transaction must leave it off.
	SigVerify bool
	// ReplaceRecentBlockhash simulates with the node's newest blockhash: a transaction built a while
	// ago is judged on its instructions, not on its age. It excludes SigVerify.
	ReplaceRecentBlockhash bool
}

// SimulateTransaction runs tx (its wire bytes) against the node's state without sending it.
func (c *Client) SimulateTransaction(ctx context.Context, tx []byte, o SimulateOptions) (*Simulation, error) {
	var r struct {
		Value *Simulation `json:"value"`
	}
	cfg := map[string]any{"encoding": "base64", "commitment": o.Commitment, "sigVerify": o.SigVerify,
		"replaceRecentBlockhash": o.ReplaceRecentBlockhash}
	if err := c.Call(ctx, "simulateTransaction", &r, base64.StdEncoding.EncodeToString(tx), cfg); err != nil {
		return nil, err
	}
	if r.Value == nil {
		return nil, fmt.Errorf("rpc simulateTransaction: %w: no value", errDecode)
	}
	return r.Value, nil
}

// SendTransaction sends tx (its wire bytes, signed) and returns its signature. With preflight the
// node simulates it first and refuses a failing one with CodeSendTransactionFailed, whose Data
// holds the Simulation.
func (c *Client) SendTransaction(ctx context.Context, tx []byte, skipPreflight bool, preflight Commitment) (string, error) {
	var sig string
	cfg := map[string]any{"encoding": "base64", "skipPreflight": skipPreflight, "preflightCommitment": preflight, "maxRetries": 0}
	if err := c.Call(ctx, "sendTransaction", &sig, base64.StdEncoding.EncodeToString(tx), cfg); err != nil {
		return "", err
	}
	if b, err := base58.Decode(sig); err != nil || len(b) != solana.SignatureSize {
		return "", fmt.Errorf("rpc sendTransaction: %w: %q is no signature", errDecode, sig)
	}
	return sig, nil
}

// Numbered reads the accounts at address(0), address(1), ... owned by owner, until a chunk of
// MaxAccountsPerCall has none: the protocol numbers its markets from 0 without holes and never
// closes them. An account of the run missing before the end, or of another owner, is an error.
func (c *Client) Numbered(ctx context.Context, address func(uint16) solana.PublicKey, owner solana.PublicKey, cm Commitment) ([]solana.PublicKey, []*Account, error) {
	var keys []solana.PublicKey
	var accounts []*Account
	for start := 0; start <= 0xffff; start += MaxAccountsPerCall {
		chunk := make([]solana.PublicKey, 0, MaxAccountsPerCall)
		for i := start; i < min(start+MaxAccountsPerCall, 0x10000); i++ {
			chunk = append(chunk, address(uint16(i)))
		}
		got, _, err := c.Accounts(ctx, chunk, cm)
		if err != nil {
			return nil, nil, err
		}
		n := 0
		for i, acc := range got {
			if acc == nil {
				continue
			}
			if i != n || acc.Owner != owner {
				return nil, nil, fmt.Errorf("numbered accounts: number %d is not the next one or not %s's", start+i, owner)
			}
			n++
			keys = append(keys, chunk[i])
			accounts = append(accounts, acc)
		}
		if n < len(chunk) {
			break
		}
	}
	return keys, accounts, nil
}
