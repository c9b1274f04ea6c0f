package simchain

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// Simulation without the program: the chain checks what it can know without running Drift's
// code, in the order the runtime meets it. The transaction's blockhash must be recent (unless it
// is to be replaced), its lookup tables must exist and hold the indexes it uses, its fee payer
// must have an account, and every program it calls must be one the chain has. Each Drift
// instruction is known by its discriminator; the accounts it must find initialized (the User, the
// UserStats, a token account, an escrow) must exist and be the program's, and the ones it
// initializes must not. Everything else succeeds, with the log lines the runtime and Anchor print
// and a fixed compute cost per kind of instruction. Nothing changes state: a simulated or sent
// transaction leaves the accounts as they were.

// Compute costs: the runtime's for its builtins, fixed figures of the order mainnet shows for the
// rest, so that a client's compute-unit estimate is the same from run to run.
const (
	builtinUnits        = 150
	createATAUnits      = 21_000
	defaultUnitsPerIx   = 200_000
	maxUnitsPerTx       = 1_400_000
	unknownDriftIxUnits = 5_000
)

// ixAccount names an instruction's account by its position, as Anchor names it in an error.
type ixAccount struct {
	index int
	name  string
}

// driftIx is what the chain knows of one of Drift's instructions: its cost, its signer, the
// accounts it needs initialized and those it initializes.
type driftIx struct {
	name     string // the IDL's name, camelCase
	units    uint64
	signer   ixAccount
	need     []ixAccount
	creates  []ixAccount
	minCount int // accounts the instruction's context has (remaining accounts come after)
}

// driftIxs are the instructions of the /tx routes, by discriminator.
var driftIxs = func() map[anchor.Discriminator]driftIx {
	user, stats := ixAccount{1, "user"}, ixAccount{2, "user_stats"}
	authority := func(i int) ixAccount { return ixAccount{i, "authority"} }
	list := []driftIx{
		{name: "deposit", units: 42_000, signer: authority(3), minCount: 7,
			need: []ixAccount{user, stats, {5, "user_token_account"}}},
		{name: "withdraw", units: 68_000, signer: authority(3), minCount: 8,
			need: []ixAccount{user, stats, {6, "user_token_account"}}},
		{name: "placeOrders", units: 95_000, signer: authority(2), minCount: 3, need: []ixAccount{user}},
		{name: "updateUserPerpPositionCustomMarginRatio", units: 14_000, signer: authority(1), minCount: 2,
			need: []ixAccount{{0, "user"}}},
		{name: "cancelOrdersByIds", units: 31_000, signer: authority(2), minCount: 3, need: []ixAccount{user}},
		{name: "cancelOrders", units: 28_000, signer: authority(2), minCount: 3, need: []ixAccount{user}},
		{name: "settleMultiplePnls", units: 120_000, signer: authority(2), minCount: 4, need: []ixAccount{user}},
		{name: "initializeRevenueShare", units: 18_000, signer: ixAccount{2, "payer"}, minCount: 5,
			creates: []ixAccount{{0, "revenue_share"}}},
		{name: "initializeRevenueShareEscrow", units: 26_000, signer: ixAccount{4, "payer"}, minCount: 7,
			need: []ixAccount{stats}, creates: []ixAccount{{0, "escrow"}}},
		{name: "changeApprovedBuilder", units: 16_000, signer: authority(1), minCount: 4,
			need: []ixAccount{{0, "escrow"}}},
	}
	out := make(map[anchor.Discriminator]driftIx, len(list))
	for _, ix := range list {
		out[anchor.InstructionDiscriminator(snake(ix.name))] = ix
	}
	return out
}()

// pascal is an IDL name as Anchor logs it: "Instruction: PlaceOrders".
func pascal(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// programError is an error of the program as Anchor reports it: a custom program error with its
// number, and the log line naming it.
type programError struct {
	code          uint32
	name, message string
	account       string // the account it is about, "" for none
}

// Anchor's own errors, which the IDL does not list.
var (
	errFallbackNotFound = programError{code: 101, name: "InstructionFallbackNotFound", message: "Fallback functions are not supported"}
	errNotEnoughKeys    = programError{code: 3005, name: "AccountNotEnoughKeys", message: "Not enough account keys given to the instruction"}
	errNotSigner        = programError{code: 3010, name: "AccountNotSigner", message: "The given account did not sign"}
	errNotInitialized   = programError{code: 3012, name: "AccountNotInitialized", message: "The program expected this account to be already initialized"}
)

// missingAccountErrors are the errors a missing program account is answered with. Anchor itself
// answers AccountNotInitialized (3012) for each, which no IDL lists; the chain answers the IDL's
// nearest error instead, so that a client's mapping of IDL errors can be tested on it. A missing
// token account is answered as Anchor answers it.
var missingAccountErrors = map[string]uint32{
	"user":       6234, // UserNotFound
	"user_stats": 6236, // UserStatsNotFound
	"escrow":     6324, // UnableToLoadRevenueShareAccount
}

func missingAccount(name string) programError {
	code, ok := missingAccountErrors[name]
	if !ok {
		e := errNotInitialized
		e.account = name
		return e
	}
	e, ok := drift.ErrorByCode(code)
	if !ok {
		panic(fmt.Sprintf("simchain: IDL error %d not in the drift package", code)) // a table of this file is wrong
	}
	return programError{code: e.Code, name: e.Name, message: e.Msg, account: name}
}

// logLine is the AnchorError line the program prints before it fails.
func (e programError) logLine() string {
	if e.account != "" {
		return fmt.Sprintf("Program log: AnchorError caused by account: %s. Error Code: %s. Error Number: %d. Error Message: %s.", e.account, e.name, e.code, e.message)
	}
	return fmt.Sprintf("Program log: AnchorError occurred. Error Code: %s. Error Number: %d. Error Message: %s.", e.name, e.code, e.message)
}

// simResult is what a simulation found: the transaction error (nil for success), the logs and the
// compute units used.
type simResult struct {
	err   any
	logs  []string
	units uint64
}

// instructionError is a TransactionError::InstructionError as JSON gives it: [index, error].
func instructionError(i int, e any) map[string]any {
	return map[string]any{"InstructionError": []any{i, e}}
}

// errMessage is the text a node gives for a transaction error, as sendTransaction's preflight
// failure reports it.
func errMessage(err any) string {
	switch e := err.(type) {
	case string:
		if m, ok := txErrorMessages[e]; ok {
			return m
		}
		return e
	case map[string]any:
		if ie, ok := e["InstructionError"].([]any); ok {
			i, inner := ie[0], ie[1]
			if c, ok := inner.(map[string]any); ok {
				if code, ok := c["Custom"].(uint32); ok {
					return fmt.Sprintf("Error processing Instruction %d: custom program error: 0x%x", i, code)
				}
			}
			if s, ok := inner.(string); ok {
				return fmt.Sprintf("Error processing Instruction %d: %s", i, instructionErrorMessages[s])
			}
		}
	}
	return fmt.Sprint(err)
}

// The runtime's messages for the errors the chain answers.
var (
	txErrorMessages = map[string]string{
		"BlockhashNotFound":              "Blockhash not found",
		"AccountNotFound":                "Attempt to debit an account but found no record of a prior credit.",
		"ProgramAccountNotFound":         "Attempt to load a program that does not exist",
		"AddressLookupTableNotFound":     "Transaction loads an address table account that doesn't exist",
		"InvalidAddressLookupTableOwner": "Transaction loads an address table account with an invalid owner",
		"InvalidAddressLookupTableData":  "Transaction loads an address table account with invalid data",
		"InvalidAddressLookupTableIndex": "Transaction address table lookup uses an invalid index",
	}
	instructionErrorMessages = map[string]string{
		"IllegalOwner":                "Provided owner is not allowed",
		"ComputationalBudgetExceeded": "Computational budget exceeded",
	}
)

// simulate runs the checks on tx; the caller holds the read lock. replace stands for
// replaceRecentBlockhash: the blockhash is not checked.
func (c *Chain) simulate(tx *solana.Transaction, replace bool) simResult {
	m := &tx.Message
	if !replace && !c.recentBlockhash(m.RecentBlockhash) {
		return simResult{err: "BlockhashNotFound", logs: []string{}}
	}
	keys, err := c.resolveKeys(m)
	if err != nil {
		return simResult{err: err, logs: []string{}}
	}
	if _, ok := c.accounts[m.FeePayer()]; !ok {
		return simResult{err: "AccountNotFound", logs: []string{}}
	}
	for _, ix := range m.Instructions {
		if !c.isProgram(keys[ix.ProgramIDIndex]) {
			return simResult{err: "ProgramAccountNotFound", logs: []string{}}
		}
	}
	limit := computeLimitOf(m, keys)
	r := simResult{logs: []string{}}
	created := map[solana.PublicKey]bool{}
	exists := func(k solana.PublicKey) bool { _, ok := c.accounts[k]; return ok || created[k] }
	for i, ix := range m.Instructions {
		prog := keys[ix.ProgramIDIndex]
		acct := func(j int) (solana.PublicKey, bool) {
			if j >= len(ix.Accounts) {
				return solana.PublicKey{}, false
			}
			return keys[ix.Accounts[j]], true
		}
		var units uint64
		var fail any
		switch prog {
		case solana.ComputeBudgetProgramID, solana.SystemProgramID, solana.Ed25519SigVerifyProgramID:
			r.logs = append(r.logs, "Program "+prog.String()+" invoke [1]", "Program "+prog.String()+" success")
			r.units += builtinUnits
			continue
		case solana.AssociatedTokenProgramID:
			units = createATAUnits
			ata, _ := acct(1)
			idempotent := len(ix.Data) > 0 && ix.Data[0] == 1
			r.logs = append(r.logs, "Program "+prog.String()+" invoke [1]", "Program log: Create")
			switch {
			case exists(ata) && !idempotent:
				fail = "IllegalOwner"
				r.logs = append(r.logs, "Program log: Error: IllegalOwner")
			case !exists(ata):
				created[ata] = true
				r.logs = append(r.logs,
					"Program "+tokenProgram+" invoke [2]", "Program log: Instruction: GetAccountDataSize",
					"Program "+tokenProgram+" success",
					"Program 11111111111111111111111111111111 invoke [2]", "Program 11111111111111111111111111111111 success",
					"Program log: Initialize the associated token account",
					"Program "+tokenProgram+" invoke [2]", "Program log: Instruction: InitializeAccount3",
					"Program "+tokenProgram+" success")
			}
		case drift.Program():
			var perr *programError
			units, perr = c.checkDrift(ix, acct, m, exists, created, &r)
			if perr != nil {
				if perr.name != "" {
					r.logs = append(r.logs, perr.logLine())
				}
				fail = map[string]any{"Custom": perr.code}
			}
		default:
			units = unknownDriftIxUnits
			r.logs = append(r.logs, "Program "+prog.String()+" invoke [1]")
		}
		if r.units+units > limit {
			units = limit - r.units
			fail = "ComputationalBudgetExceeded"
		}
		r.units += units
		r.logs = append(r.logs, fmt.Sprintf("Program %s consumed %d of %d compute units", prog, units, limit-(r.units-units)))
		if fail != nil {
			r.err = instructionError(i, fail)
			if pe, ok := fail.(map[string]any); ok {
				r.logs = append(r.logs, fmt.Sprintf("Program %s failed: custom program error: 0x%x", prog, pe["Custom"]))
			} else {
				r.logs = append(r.logs, fmt.Sprintf("Program %s failed: %s", prog, instructionErrorMessages[fail.(string)]))
			}
			return r
		}
		r.logs = append(r.logs, "Program "+prog.String()+" success")
	}
	return r
}

// checkDrift checks one Drift instruction and logs its start; it returns its compute units and
// the error it fails with.
func (c *Chain) checkDrift(ix solana.CompiledInstruction, acct func(int) (solana.PublicKey, bool), m *solana.Message,
	exists func(solana.PublicKey) bool, created map[solana.PublicKey]bool, r *simResult) (uint64, *programError) {
	r.logs = append(r.logs, "Program "+drift.ProgramID+" invoke [1]")
	if len(ix.Data) < anchor.DiscriminatorSize {
		return unknownDriftIxUnits, &errFallbackNotFound
	}
	spec, ok := driftIxs[anchor.Discriminator(ix.Data[:anchor.DiscriminatorSize])]
	if !ok {
		return unknownDriftIxUnits, &errFallbackNotFound
	}
	r.logs = append(r.logs, "Program log: Instruction: "+pascal(spec.name))
	if len(ix.Accounts) < spec.minCount {
		return unknownDriftIxUnits, &errNotEnoughKeys
	}
	if !m.IsSigner(int(ix.Accounts[spec.signer.index])) {
		e := errNotSigner
		e.account = spec.signer.name
		return unknownDriftIxUnits, &e
	}
	for _, a := range spec.need {
		k, _ := acct(a.index)
		if !exists(k) {
			e := missingAccount(a.name)
			return unknownDriftIxUnits, &e
		}
	}
	for _, a := range spec.creates {
		k, _ := acct(a.index)
		if exists(k) {
			// The system program refuses to allocate an account in use; the program fails with its
			// error, custom error 0, and prints no AnchorError of its own.
			r.logs = append(r.logs, "Program 11111111111111111111111111111111 invoke [2]",
				fmt.Sprintf("Allocate: account Address { address: %s, base: None } already in use", k),
				"Program 11111111111111111111111111111111 failed: custom program error: 0x0")
			return unknownDriftIxUnits, &programError{code: 0}
		}
		created[k] = true
	}
	return spec.units, nil
}

// recentBlockhash reports whether h is the hash of one of the blocks a transaction may still name,
// or of the tip before the first block.
func (c *Chain) recentBlockhash(h [32]byte) bool {
	if c.blockhash(c.tip()) == solana.PublicKey(h).String() {
		return true
	}
	for i := len(c.blocks) - 1; i >= 0 && i >= len(c.blocks)-lastValidBlocks; i-- {
		if c.blockhash(c.blocks[i].slot) == solana.PublicKey(h).String() {
			return true
		}
	}
	return false
}

// resolveKeys is the message's full account list: its static keys, then the writable addresses it
// looks up, table by table, then the read-only ones. Its error is the transaction error a node
// answers.
func (c *Chain) resolveKeys(m *solana.Message) ([]solana.PublicKey, any) {
	keys := append([]solana.PublicKey(nil), m.AccountKeys...)
	var readonly []solana.PublicKey
	for _, l := range m.AddressTableLookups {
		a, ok := c.accounts[l.AccountKey]
		if !ok {
			return nil, "AddressLookupTableNotFound"
		}
		if a.owner != solana.AddressLookupTableProgramID {
			return nil, "InvalidAddressLookupTableOwner"
		}
		t, err := solana.DecodeLookupTable(l.AccountKey, a.data)
		if err != nil {
			return nil, "InvalidAddressLookupTableData"
		}
		for _, idx := range bytes.Join([][]byte{l.WritableIndexes, l.ReadonlyIndexes}, nil) {
			if int(idx) >= len(t.Addresses) {
				return nil, "InvalidAddressLookupTableIndex"
			}
		}
		for _, idx := range l.WritableIndexes {
			keys = append(keys, t.Addresses[idx])
		}
		for _, idx := range l.ReadonlyIndexes {
			readonly = append(readonly, t.Addresses[idx])
		}
	}
	return append(keys, readonly...), nil
}

// isProgram reports whether the chain runs program k.
func (c *Chain) isProgram(k solana.PublicKey) bool {
	switch k {
	case drift.Program(), solana.SystemProgramID, solana.ComputeBudgetProgramID, solana.TokenProgramID,
		solana.AssociatedTokenProgramID, solana.Ed25519SigVerifyProgramID:
		return true
	}
	return false
}

// computeLimitOf is the transaction's compute budget: its SetComputeUnitLimit, else the runtime's
// default per instruction that is not a compute budget one, capped as the runtime caps it.
func computeLimitOf(m *solana.Message, keys []solana.PublicKey) uint64 {
	n := uint64(0)
	for _, ix := range m.Instructions {
		if keys[ix.ProgramIDIndex] != solana.ComputeBudgetProgramID {
			n++
			continue
		}
		if len(ix.Data) == 5 && ix.Data[0] == 2 {
			return min(uint64(binary.LittleEndian.Uint32(ix.Data[1:])), maxUnitsPerTx)
		}
	}
	return min(n*defaultUnitsPerIx, maxUnitsPerTx)
}
