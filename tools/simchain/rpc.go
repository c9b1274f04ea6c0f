package simchain

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/platform/chain/solana"
)

// JSON-RPC 2.0 over HTTP POST, with the error codes and shapes of a Solana node (the Solana RPC
// spec and what nodes answer): a single call or a batch (an array) per request.

// Error codes: JSON-RPC's own and the node's.
const (
	codeParse             = -32700
	codeInvalidRequest    = -32600
	codeMethodNotFound    = -32601
	codeInvalidParams     = -32602
	codeCleanedUp         = -32001 // "Block cleaned up, does not exist on node. First available block: N"
	codeBlockNotAvailable = -32004
	codeSlotSkipped       = -32007
	codeTxVersion         = -32015
)

// maxBlocksRange is the most slots one getBlocks spans, and maxAccounts the most keys of one
// getMultipleAccounts, as nodes limit them.
const (
	maxBlocksRange = 500_000
	maxAccounts    = 100
)

type request struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
	ID      json.RawMessage `json:"id"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"` // sendTransaction's preflight failure: the simulation
}

func (e *rpcError) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Handler serves the chain's JSON-RPC, with the faults set by SetFaults.
func (c *Chain) Handler() http.Handler {
	return http.HandlerFunc(c.serveHTTP)
}

func (c *Chain) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "JSON-RPC takes POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "reading the request failed", http.StatusBadRequest)
		return
	}
	body = bytes.TrimSpace(body)
	batch := len(body) > 0 && body[0] == '['
	var reqs []json.RawMessage
	if batch {
		if err := json.Unmarshal(body, &reqs); err != nil {
			writeJSON(w, response{JSONRPC: "2.0", Error: errorf(codeParse, "Parse error"), ID: json.RawMessage("null")})
			return
		}
	} else {
		reqs = []json.RawMessage{body}
	}
	v := c.faults.judge(max(1, len(reqs)))
	if v.hold > 0 {
		t := time.NewTimer(v.hold)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	switch v.status {
	case 0:
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(v.status)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","error":{"code":429,"message":"Too many requests for a specific RPC call, contact your app developer or support@rpcpool.com."},"id":null}`)
		return
	default:
		http.Error(w, http.StatusText(v.status), v.status)
		return
	}
	if len(reqs) == 0 {
		writeJSON(w, response{JSONRPC: "2.0", Error: errorf(codeInvalidRequest, "Invalid request"), ID: json.RawMessage("null")})
		return
	}
	out := make([]response, len(reqs))
	for i, raw := range reqs {
		out[i] = c.call(raw)
	}
	if batch {
		writeJSON(w, out)
		return
	}
	writeJSON(w, out[0])
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// The client went away if this fails: nothing to tell it.
	_ = json.NewEncoder(w).Encode(v)
}

func (c *Chain) call(raw json.RawMessage) response {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		return response{JSONRPC: "2.0", Error: errorf(codeParse, "Parse error"), ID: json.RawMessage("null")}
	}
	id := req.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return response{JSONRPC: "2.0", Error: errorf(codeInvalidRequest, "Invalid request"), ID: id}
	}
	m, ok := methods[req.Method]
	if !ok {
		return response{JSONRPC: "2.0", Error: errorf(codeMethodNotFound, "Method not found"), ID: id}
	}
	res, err := m(c, req.Params)
	if err != nil {
		return response{JSONRPC: "2.0", Error: err, ID: id}
	}
	return response{JSONRPC: "2.0", Result: res, ID: id}
}

var methods map[string]func(*Chain, []json.RawMessage) (any, *rpcError)

func init() {
	methods = map[string]func(*Chain, []json.RawMessage) (any, *rpcError){
		"getSlot":                (*Chain).getSlot,
		"getBlockHeight":         (*Chain).getBlockHeight,
		"getBlocks":              (*Chain).getBlocks,
		"getBlock":               (*Chain).getBlock,
		"getAccountInfo":         (*Chain).getAccountInfo,
		"getMultipleAccounts":    (*Chain).getMultipleAccounts,
		"getLatestBlockhash":     (*Chain).getLatestBlockhash,
		"getFirstAvailableBlock": (*Chain).getFirstAvailableBlock,
		"getHealth":              func(*Chain, []json.RawMessage) (any, *rpcError) { return "ok", nil },
		"getVersion": func(*Chain, []json.RawMessage) (any, *rpcError) {
			return map[string]any{"solana-core": "2.2.20", "feature-set": 3294202862}, nil
		},
		"getGenesisHash":        (*Chain).getGenesisHash,
		"minimumLedgerSlot":     (*Chain).getFirstAvailableBlock,
		"getMaxRetransmitSlot":  (*Chain).getSlot,
		"getMaxShredInsertSlot": (*Chain).getSlot,
		"simulateTransaction":   (*Chain).simulateTransaction,
		"sendTransaction":       (*Chain).sendTransaction,
	}
}

// config is the options object every method may take last; commitments all read the one tip.
type config struct {
	Commitment                     string `json:"commitment"`
	Encoding                       string `json:"encoding"`
	TransactionDetails             string `json:"transactionDetails"`
	MaxSupportedTransactionVersion *int   `json:"maxSupportedTransactionVersion"`
	Rewards                        *bool  `json:"rewards"`
	MinContextSlot                 *int64 `json:"minContextSlot"`
}

func invalidParams(format string, args ...any) *rpcError {
	return errorf(codeInvalidParams, "Invalid params: "+format, args...)
}

// param decodes params[i] into v when present; ok is false when it is absent.
func param(params []json.RawMessage, i int, v any) (ok bool, err *rpcError) {
	if i >= len(params) || string(params[i]) == "null" {
		return false, nil
	}
	if e := json.Unmarshal(params[i], v); e != nil {
		return false, invalidParams("%v", e)
	}
	return true, nil
}

func (c *Chain) getSlot(params []json.RawMessage) (any, *rpcError) {
	var cfg config
	if _, err := param(params, 0, &cfg); err != nil {
		return nil, err
	}
	return c.Tip(), nil
}

func (c *Chain) getBlockHeight(params []json.RawMessage) (any, *rpcError) {
	var cfg config
	if _, err := param(params, 0, &cfg); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.blocks) == 0 {
		return 0, nil
	}
	return c.blocks[len(c.blocks)-1].height, nil
}

func (c *Chain) getFirstAvailableBlock([]json.RawMessage) (any, *rpcError) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.blocks) == 0 {
		return 0, nil
	}
	return c.blocks[0].slot, nil
}

func (c *Chain) getGenesisHash([]json.RawMessage) (any, *rpcError) {
	return c.blockhash(-1), nil
}

// getBlocks lists the slots with a block in [start, end], end defaulting to the tip.
func (c *Chain) getBlocks(params []json.RawMessage) (any, *rpcError) {
	var start int64
	if ok, err := param(params, 0, &start); err != nil || !ok {
		return nil, orMissing(err, "start slot")
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	end := c.tip()
	if len(params) > 1 && len(bytes.TrimSpace(params[1])) > 0 && params[1][0] != '{' {
		if _, err := param(params, 1, &end); err != nil {
			return nil, err
		}
	}
	if start < 0 || end < 0 {
		return nil, invalidParams("negative slot")
	}
	if end-start >= maxBlocksRange {
		return nil, invalidParams("Slot range too large; max %d", maxBlocksRange)
	}
	out := []int64{}
	i, _ := c.find(start)
	for ; i < len(c.blocks) && c.blocks[i].slot <= end; i++ {
		out = append(out, c.blocks[i].slot)
	}
	return out, nil
}

func orMissing(err *rpcError, what string) *rpcError {
	if err != nil {
		return err
	}
	return invalidParams("missing %s", what)
}

// getBlock renders slot's block, or answers as a node does for a slot without one.
func (c *Chain) getBlock(params []json.RawMessage) (any, *rpcError) {
	var slot int64
	if ok, err := param(params, 0, &slot); err != nil || !ok {
		return nil, orMissing(err, "slot")
	}
	var cfg config
	if _, err := param(params, 1, &cfg); err != nil {
		return nil, err
	}
	switch cfg.Encoding {
	case "", "json":
	default:
		return nil, invalidParams("unsupported encoding %q: this node renders json", cfg.Encoding)
	}
	switch cfg.TransactionDetails {
	case "", "full", "signatures", "none":
	default:
		return nil, invalidParams("unknown variant `%s`, expected one of `full`, `signatures`, `none`, `accounts`", cfg.TransactionDetails)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if slot > c.tip() {
		return nil, errorf(codeBlockNotAvailable, "Block not available for slot %d", slot)
	}
	if c.pruned > 0 && len(c.blocks) > 0 && slot < c.blocks[0].slot {
		return nil, errorf(codeCleanedUp, "Block %d cleaned up, does not exist on node. First available block: %d", slot, c.blocks[0].slot)
	}
	i, ok := c.find(slot)
	if !ok {
		return nil, errorf(codeSlotSkipped, "Slot %d was skipped, or missing due to ledger jump to recent snapshot", slot)
	}
	b := c.blocks[i]
	// Every transaction is a version 0 one, as most of mainnet's are: a client that did not say it
	// reads them is refused, as a node refuses it.
	details := cfg.TransactionDetails
	if details != "none" && cfg.MaxSupportedTransactionVersion == nil && len(b.txs) > 0 {
		return nil, errorf(codeTxVersion, "Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: \"maxSupportedTransactionVersion\": 0")
	}
	rewards := cfg.Rewards == nil || *cfg.Rewards
	return c.blockJSON(b, details, rewards), nil
}

// accountJSON is an account in base64, as getAccountInfo and getMultipleAccounts give it.
type accountJSON struct {
	Data       [2]string `json:"data"`
	Executable bool      `json:"executable"`
	Lamports   uint64    `json:"lamports"`
	Owner      string    `json:"owner"`
	RentEpoch  uint64    `json:"rentEpoch"`
	Space      int       `json:"space"`
}

type contextJSON struct {
	APIVersion string `json:"apiVersion"`
	Slot       int64  `json:"slot"`
}

type valueJSON struct {
	Context contextJSON `json:"context"`
	Value   any         `json:"value"`
}

func (c *Chain) accountJSON(k solana.PublicKey) *accountJSON {
	a, ok := c.accounts[k]
	if !ok {
		return nil
	}
	n := a.lamports
	if n == 0 {
		n = lamports(len(a.data))
	}
	return &accountJSON{
		Data: [2]string{base64.StdEncoding.EncodeToString(a.data), "base64"}, Lamports: n,
		Owner: a.owner.String(), RentEpoch: 18446744073709551615, Space: len(a.data),
	}
}

func accountConfig(params []json.RawMessage, i int) *rpcError {
	var cfg config
	if _, err := param(params, i, &cfg); err != nil {
		return err
	}
	if cfg.Encoding != "base64" && cfg.Encoding != "" {
		return invalidParams("unsupported encoding %q: this node answers base64", cfg.Encoding)
	}
	return nil
}

func (c *Chain) getAccountInfo(params []json.RawMessage) (any, *rpcError) {
	var key string
	if ok, err := param(params, 0, &key); err != nil || !ok {
		return nil, orMissing(err, "account key")
	}
	k, err := solana.ParsePublicKey(key)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	if err := accountConfig(params, 1); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := valueJSON{Context: contextJSON{APIVersion: "2.2.20", Slot: c.tip()}}
	if a := c.accountJSON(k); a != nil {
		v.Value = a
	}
	return v, nil
}

func (c *Chain) getMultipleAccounts(params []json.RawMessage) (any, *rpcError) {
	var keys []string
	if ok, err := param(params, 0, &keys); err != nil || !ok {
		return nil, orMissing(err, "account keys")
	}
	if len(keys) > maxAccounts {
		return nil, invalidParams("Too many inputs provided; max %d", maxAccounts)
	}
	if err := accountConfig(params, 1); err != nil {
		return nil, err
	}
	pks := make([]solana.PublicKey, len(keys))
	for i, s := range keys {
		k, err := solana.ParsePublicKey(s)
		if err != nil {
			return nil, invalidParams("%v", err)
		}
		pks[i] = k
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	values := make([]*accountJSON, len(pks))
	for i, k := range pks {
		values[i] = c.accountJSON(k)
	}
	return valueJSON{Context: contextJSON{APIVersion: "2.2.20", Slot: c.tip()}, Value: values}, nil
}

// lastValidBlocks is how many blocks a blockhash stays valid for.
const lastValidBlocks = 150

func (c *Chain) getLatestBlockhash(params []json.RawMessage) (any, *rpcError) {
	var cfg config
	if _, err := param(params, 0, &cfg); err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	tip, height := c.tip(), uint64(0)
	if n := len(c.blocks); n > 0 {
		height = c.blocks[n-1].height
	}
	return valueJSON{
		Context: contextJSON{APIVersion: "2.2.20", Slot: tip},
		Value:   map[string]any{"blockhash": c.blockhash(tip), "lastValidBlockHeight": height + lastValidBlocks},
	}, nil
}
