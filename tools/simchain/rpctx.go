package simchain

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/tidemark/tidemark/platform/chain/base58"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// simulateTransaction and sendTransaction as a node answers them (the Solana RPC spec), over the
// checks of simulate. A sent transaction is recorded, never applied: the chain's state is the
// simulator's alone.

// Error codes of the node's transaction methods.
const (
	codeSendPreflightFailure = -32002
	codeSignatureFailure     = -32003
)

// txConfig is the options object of simulateTransaction and sendTransaction.
type txConfig struct {
	Encoding               string `json:"encoding"`
	Commitment             string `json:"commitment"`
	SigVerify              bool   `json:"sigVerify"`
	ReplaceRecentBlockhash bool   `json:"replaceRecentBlockhash"`
	SkipPreflight          bool   `json:"skipPreflight"`
	PreflightCommitment    string `json:"preflightCommitment"`
	MaxRetries             *int   `json:"maxRetries"`
	MinContextSlot         *int64 `json:"minContextSlot"`
	InnerInstructions      bool   `json:"innerInstructions"`
	Accounts               *struct {
		Addresses []string `json:"addresses"`
		Encoding  string   `json:"encoding"`
	} `json:"accounts"`
}

// Sent is a transaction sent to the chain: its signature, its bytes as sent, the tip when it came,
// and the error its simulation gave (nil; with skipPreflight, the error it would have failed with).
type Sent struct {
	Signature string
	Raw       []byte
	Slot      int64
	Err       any
}

// Sent lists the transactions sent to the chain, oldest first.
func (c *Chain) Sent() []Sent {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	return slices.Clone(c.sent)
}

// simulationJSON is simulateTransaction's value, and the data of sendTransaction's preflight
// failure.
type simulationJSON struct {
	Err                  any                   `json:"err"`
	Logs                 []string              `json:"logs"`
	Accounts             []*accountJSON        `json:"accounts"`
	UnitsConsumed        uint64                `json:"unitsConsumed"`
	ReturnData           any                   `json:"returnData"`
	ReplacementBlockhash *replacementBlockhash `json:"replacementBlockhash,omitempty"`
}

type replacementBlockhash struct {
	Blockhash            string `json:"blockhash"`
	LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
}

// readTx decodes the transaction of params[0] in the config's encoding (base58 by default, as the
// spec has it).
func readTx(params []json.RawMessage) (*solana.Transaction, []byte, txConfig, *rpcError) {
	var text string
	var cfg txConfig
	if ok, err := param(params, 0, &text); err != nil || !ok {
		return nil, nil, cfg, orMissing(err, "transaction")
	}
	if _, err := param(params, 1, &cfg); err != nil {
		return nil, nil, cfg, err
	}
	var raw []byte
	var err error
	switch cfg.Encoding {
	case "", "base58":
		raw, err = base58.Decode(text)
		if err != nil {
			return nil, nil, cfg, invalidParams("invalid base58 encoding: %v", err)
		}
	case "base64":
		raw, err = base64.StdEncoding.DecodeString(text)
		if err != nil {
			return nil, nil, cfg, invalidParams("invalid base64 encoding: %v", err)
		}
	default:
		return nil, nil, cfg, invalidParams("unsupported encoding: %s. Supported encodings: base58, base64", cfg.Encoding)
	}
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		return nil, nil, cfg, errorf(codeInvalidParams, "failed to deserialize solana_sdk::transaction::versioned::VersionedTransaction: %v", err)
	}
	return tx, raw, cfg, nil
}

func (c *Chain) simulateTransaction(params []json.RawMessage) (any, *rpcError) {
	tx, _, cfg, rerr := readTx(params)
	if rerr != nil {
		return nil, rerr
	}
	if cfg.SigVerify && cfg.ReplaceRecentBlockhash {
		return nil, invalidParams("sigVerify may not be used with replaceRecentBlockhash")
	}
	if cfg.SigVerify && tx.Verify() != nil {
		return nil, errorf(codeSignatureFailure, "Transaction signature verification failure")
	}
	var keys []solana.PublicKey
	if cfg.Accounts != nil {
		for _, s := range cfg.Accounts.Addresses {
			k, err := solana.ParsePublicKey(s)
			if err != nil {
				return nil, invalidParams("%v", err)
			}
			keys = append(keys, k)
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	r := c.simulate(tx, cfg.ReplaceRecentBlockhash)
	v := simulationJSON{Err: r.err, Logs: r.logs, UnitsConsumed: r.units}
	if cfg.Accounts != nil {
		// Nothing a simulation does changes an account: the accounts after it are those before.
		v.Accounts = make([]*accountJSON, len(keys))
		for i, k := range keys {
			v.Accounts[i] = c.accountJSON(k)
		}
	}
	if cfg.ReplaceRecentBlockhash {
		height := uint64(0)
		if n := len(c.blocks); n > 0 {
			height = c.blocks[n-1].height
		}
		v.ReplacementBlockhash = &replacementBlockhash{Blockhash: c.blockhash(c.tip()), LastValidBlockHeight: height + lastValidBlocks}
	}
	return valueJSON{Context: contextJSON{APIVersion: "2.2.20", Slot: c.tip()}, Value: v}, nil
}

func (c *Chain) sendTransaction(params []json.RawMessage) (any, *rpcError) {
	tx, raw, cfg, rerr := readTx(params)
	if rerr != nil {
		return nil, rerr
	}
	if tx.Verify() != nil {
		return nil, errorf(codeSignatureFailure, "Transaction signature verification failure")
	}
	c.mu.RLock()
	r := c.simulate(tx, false)
	slot := c.tip()
	c.mu.RUnlock()
	if r.err != nil && !cfg.SkipPreflight {
		e := errorf(codeSendPreflightFailure, "Transaction simulation failed: %s", errMessage(r.err))
		e.Data = simulationJSON{Err: r.err, Logs: r.logs, UnitsConsumed: r.units}
		return nil, e
	}
	sig := tx.Signature()
	c.sentMu.Lock()
	c.sent = append(c.sent, Sent{Signature: sig, Raw: raw, Slot: slot, Err: r.err})
	c.sentMu.Unlock()
	return sig, nil
}
