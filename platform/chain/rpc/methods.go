package rpc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// Slot is the newest slot at commitment c: with Finalized, the finalized tip.
func (c *Client) Slot(ctx context.Context, cm Commitment) (uint64, error) {
	var slot uint64
	err := c.Call(ctx, "getSlot", &slot, map[string]any{"commitment": cm})
	return slot, err
}

// MaxBlocksRange is the most slots one getBlocks may span (the RPC refuses more).
const MaxBlocksRange = 500_000

// Blocks lists the slots from start to end, both included, that have a block at commitment cm:
// the slots it leaves out were skipped by the cluster. The span must not pass MaxBlocksRange.
func (c *Client) Blocks(ctx context.Context, start, end uint64, cm Commitment) ([]uint64, error) {
	if end < start {
		return nil, nil
	}
	if end-start >= MaxBlocksRange {
		return nil, fmt.Errorf("rpc getBlocks: %d slots from %d, more than the %d one call may span", end-start+1, start, MaxBlocksRange)
	}
	var slots []uint64
	err := c.Call(ctx, "getBlocks", &slots, start, end, map[string]any{"commitment": cm})
	return slots, err
}

// Block is a block as getBlock answers it with full transaction details in JSON, reduced to what
// the indexer reads.
type Block struct {
	Blockhash         string        `json:"blockhash"`
	PreviousBlockhash string        `json:"previousBlockhash"`
	ParentSlot        uint64        `json:"parentSlot"`
	BlockTime         *int64        `json:"blockTime"`
	BlockHeight       *uint64       `json:"blockHeight"`
	Transactions      []Transaction `json:"transactions"`
}

// Transaction is one transaction of a block: its signatures (the first is its id) and its meta.
type Transaction struct {
	Transaction struct {
		Signatures []string `json:"signatures"`
	} `json:"transaction"`
	Meta *Meta `json:"meta"`
}

// Signature is the transaction's id, its first signature ("" when it has none).
func (t *Transaction) Signature() string {
	if len(t.Transaction.Signatures) == 0 {
		return ""
	}
	return t.Transaction.Signatures[0]
}

// Meta is what running a transaction left: its error (JSON null when it succeeded) and its log.
type Meta struct {
	Err         json.RawMessage `json:"err"`
	LogMessages []string        `json:"logMessages"`
}

// Failed reports whether the transaction failed: its changes were reverted and its events never
// happened.
func (m *Meta) Failed() bool {
	return m != nil && len(m.Err) > 0 && string(m.Err) != "null"
}

// Block reads the block of slot at commitment cm with every transaction's signatures and log, or
// ErrSkipped when the slot has none.
func (c *Client) Block(ctx context.Context, slot uint64, cm Commitment) (*Block, error) {
	var b Block
	err := c.Call(ctx, "getBlock", &b, slot, map[string]any{
		"commitment": cm, "encoding": "json", "transactionDetails": "full",
		"maxSupportedTransactionVersion": 0, "rewards": false,
	})
	var re *Error
	if errors.As(err, &re) && (re.Code == CodeSlotSkipped || re.Code == CodeLongTermStorageSkipped) {
		return nil, fmt.Errorf("slot %d: %w (%s)", slot, ErrSkipped, re.Message)
	}
	if err != nil {
		return nil, fmt.Errorf("slot %d: %w", slot, err)
	}
	return &b, nil
}

// Account is an account's state: its owner and data.
type Account struct {
	Owner    solana.PublicKey
	Lamports uint64
	Data     []byte
}

type accountJSON struct {
	Data     [2]string `json:"data"`
	Owner    string    `json:"owner"`
	Lamports uint64    `json:"lamports"`
}

func (a accountJSON) decode() (*Account, error) {
	if a.Data[1] != "base64" {
		return nil, fmt.Errorf("account data in %q, asked for base64", a.Data[1])
	}
	data, err := base64.StdEncoding.DecodeString(a.Data[0])
	if err != nil {
		return nil, fmt.Errorf("account data: %w", err)
	}
	owner, err := solana.ParsePublicKey(a.Owner)
	if err != nil {
		return nil, fmt.Errorf("account owner: %w", err)
	}
	return &Account{Owner: owner, Lamports: a.Lamports, Data: data}, nil
}

// MaxAccountsPerCall is the most keys one getMultipleAccounts takes.
const MaxAccountsPerCall = 100

// Accounts reads the accounts of keys at commitment cm, in calls of at most MaxAccountsPerCall
// keys; an account that does not exist is nil. slot is the lowest slot the calls read at.
func (c *Client) Accounts(ctx context.Context, keys []solana.PublicKey, cm Commitment) (accounts []*Account, slot uint64, err error) {
	accounts = make([]*Account, 0, len(keys))
	for start := 0; start < len(keys); start += MaxAccountsPerCall {
		chunk := keys[start:min(len(keys), start+MaxAccountsPerCall)]
		names := make([]string, len(chunk))
		for i, k := range chunk {
			names[i] = k.String()
		}
		var r struct {
			Context struct {
				Slot uint64 `json:"slot"`
			} `json:"context"`
			Value []*accountJSON `json:"value"`
		}
		if err := c.Call(ctx, "getMultipleAccounts", &r, names, map[string]any{"commitment": cm, "encoding": "base64"}); err != nil {
			return nil, 0, err
		}
		if len(r.Value) != len(chunk) {
			return nil, 0, fmt.Errorf("rpc getMultipleAccounts: %d accounts for %d keys", len(r.Value), len(chunk))
		}
		if start == 0 || r.Context.Slot < slot {
			slot = r.Context.Slot
		}
		for i, v := range r.Value {
			if v == nil {
				accounts = append(accounts, nil)
				continue
			}
			a, err := v.decode()
			if err != nil {
				return nil, 0, fmt.Errorf("rpc getMultipleAccounts: %s: %w", names[i], err)
			}
			accounts = append(accounts, a)
		}
	}
	return accounts, slot, nil
}

// LatestBlockhash is the newest blockhash at commitment cm and the last block height at which a
// transaction naming it can land.
func (c *Client) LatestBlockhash(ctx context.Context, cm Commitment) (hash string, lastValidBlockHeight uint64, err error) {
	var r struct {
		Value struct {
			Blockhash            string `json:"blockhash"`
			LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
		} `json:"value"`
	}
	if err := c.Call(ctx, "getLatestBlockhash", &r, map[string]any{"commitment": cm}); err != nil {
		return "", 0, err
	}
	return r.Value.Blockhash, r.Value.LastValidBlockHeight, nil
}
