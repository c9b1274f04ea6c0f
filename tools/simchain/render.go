package simchain

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/base58"
	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// Rendering: a sealed block becomes getBlock's JSON when asked, so that the chain keeps bytes, not
// JSON. What the records do not say (fee payers, which transaction goes through a jit-proxy, the
// failed and the other programs' transactions) is a hash of the seed and the slot or signature:
// the same request gives the same answer, however often it is asked.

// Programs the logs name besides Drift.
const (
	computeBudgetProgram = "ComputeBudget111111111111111111111111111111"
	tokenProgram         = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
	jitProxyProgram      = "J1TnP8zvVxbtF5KFp5xRmWuvG9McnhzmBd9XGfCyuxFP"
	jupiterProgram       = "JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4"
	whirlpoolProgram     = "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc"
)

// computeLimit is the compute budget every transaction asks for.
const computeLimit = 1_400_000

// fee is every transaction's fee: one signature at the base fee.
const fee = 5000

// hash is the chain's deterministic randomness: sha256 of the seed, a label and the parts.
func (c *Chain) hash(label string, parts ...[]byte) [32]byte {
	h := sha256.New()
	h.Write(c.seed[:])
	h.Write([]byte(label))
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func slotBytes(slot int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(slot)) }

// chance reports whether the thing named label happens to key: one time in every (never when
// every is negative).
func (c *Chain) chance(label string, key []byte, every int) bool {
	if every <= 0 {
		return false
	}
	h := c.hash(label, key)
	return binary.LittleEndian.Uint64(h[:8])%uint64(every) == 0
}

// blockhash is the hash of slot's block: base58 of a sha256, as a real one looks.
func (c *Chain) blockhash(slot int64) string {
	h := c.hash("blockhash", slotBytes(slot))
	return base58.Encode(h[:])
}

// key is a deterministic address for label and key.
func (c *Chain) key(label string, key []byte) solana.PublicKey {
	return solana.PublicKey(c.hash(label, key))
}

// walletPool is how many fee payers and accounts the transactions draw theirs from: the keys are
// made once, as base58 takes longer than the rest of a transaction's rendering.
const walletPool = 512

// wallet is the address, drawn from the chain's pool, that key uses as label.
func (c *Chain) wallet(label string, key []byte) string {
	c.walletsOnce.Do(func() {
		c.wallets = make([]string, walletPool)
		for i := range c.wallets {
			c.wallets[i] = c.key("wallet", []byte{byte(i), byte(i >> 8)}).String()
		}
	})
	h := c.hash(label, key)
	return c.wallets[binary.LittleEndian.Uint64(h[:8])%walletPool]
}

// signature is a deterministic 64-byte transaction signature.
func (c *Chain) signature(label string, key []byte) string {
	a, b := c.hash(label+"/0", key), c.hash(label+"/1", key)
	return base58.Encode(append(a[:], b[:]...))
}

// The JSON of getBlock with encoding "json" and full transaction details.
type (
	blockJSON struct {
		BlockHeight       uint64    `json:"blockHeight"`
		BlockTime         int64     `json:"blockTime"`
		Blockhash         string    `json:"blockhash"`
		ParentSlot        int64     `json:"parentSlot"`
		PreviousBlockhash string    `json:"previousBlockhash"`
		Transactions      *[]txJSON `json:"transactions,omitempty"`
		Signatures        *[]string `json:"signatures,omitempty"`
		Rewards           *[]string `json:"rewards,omitempty"`
	}
	txJSON struct {
		Transaction transactionJSON `json:"transaction"`
		Meta        metaJSON        `json:"meta"`
		Version     int             `json:"version"`
	}
	transactionJSON struct {
		Signatures []string    `json:"signatures"`
		Message    messageJSON `json:"message"`
	}
	messageJSON struct {
		AccountKeys     []string          `json:"accountKeys"`
		Header          headerJSON        `json:"header"`
		RecentBlockhash string            `json:"recentBlockhash"`
		Instructions    []instructionJSON `json:"instructions"`
	}
	headerJSON struct {
		NumRequiredSignatures       int `json:"numRequiredSignatures"`
		NumReadonlySignedAccounts   int `json:"numReadonlySignedAccounts"`
		NumReadonlyUnsignedAccounts int `json:"numReadonlyUnsignedAccounts"`
	}
	instructionJSON struct {
		ProgramIDIndex int    `json:"programIdIndex"`
		Accounts       []int  `json:"accounts"`
		Data           string `json:"data"`
		StackHeight    *int   `json:"stackHeight"`
	}
	innerJSON struct {
		Index        int               `json:"index"`
		Instructions []instructionJSON `json:"instructions"`
	}
	metaJSON struct {
		Err                  json.RawMessage `json:"err"`
		Status               json.RawMessage `json:"status"`
		Fee                  uint64          `json:"fee"`
		PreBalances          []uint64        `json:"preBalances"`
		PostBalances         []uint64        `json:"postBalances"`
		InnerInstructions    []innerJSON     `json:"innerInstructions"`
		LogMessages          []string        `json:"logMessages"`
		PreTokenBalances     []struct{}      `json:"preTokenBalances"`
		PostTokenBalances    []struct{}      `json:"postTokenBalances"`
		Rewards              []struct{}      `json:"rewards"`
		LoadedAddresses      loadedJSON      `json:"loadedAddresses"`
		ComputeUnitsConsumed uint64          `json:"computeUnitsConsumed"`
	}
	loadedJSON struct {
		Writable []string `json:"writable"`
		Readonly []string `json:"readonly"`
	}
)

// stackEvents are the events the program logs with emit_stack, as "Program log: " lines; the
// others go through emit!, "Program data: ".
var stackEvents = map[anchor.Discriminator]bool{
	(*drift.OrderActionRecord)(nil).Discriminator():        true,
	(*drift.OrderRecord)(nil).Discriminator():              true,
	(*drift.LPSwapRecord)(nil).Discriminator():             true,
	(*drift.LPMintRedeemRecord)(nil).Discriminator():       true,
	(*drift.RevenueShareSettleRecord)(nil).Discriminator(): true,
}

// logLine is an event's log line as the program writes it. A trigger goes through emit! in the
// program's trigger paths, so that OrderActionRecords come under both prefixes.
func logLine(e []byte) string {
	d := anchor.Discriminator(e[:8])
	if stackEvents[d] && !(d == (*drift.OrderActionRecord)(nil).Discriminator() && drift.OrderAction(e[16]) == drift.OrderActionTrigger) {
		return "Program log: " + base64.StdEncoding.EncodeToString(e)
	}
	return "Program data: " + base64.StdEncoding.EncodeToString(e)
}

// instructionNames name a transaction's Drift instruction by its first event, for the
// "Instruction:" line anchor logs (plain msg! text, which a parser must skip).
var instructionNames = map[string]string{
	"OrderRecord": "PlacePerpOrder", "OrderActionRecord": "FillPerpOrder", "DepositRecord": "Deposit",
	"FundingRateRecord": "UpdateFundingRate", "FundingPaymentRecord": "SettleFundingPayment",
	"LiquidationRecord": "LiquidatePerp", "SwapRecord": "EndSwap", "SettlePnlRecord": "SettlePnl",
	"LPRecord": "AddPerpLpShares", "InsuranceFundRecord": "SettleRevenueToInsuranceFund",
	"InsuranceFundStakeRecord": "AddInsuranceFundStake", "LPMintRedeemRecord": "LpPoolAddLiquidity",
	"NewUserRecord": "InitializeUser",
}

// eventNames name the events records.Event makes, by discriminator.
var eventNames = func() map[anchor.Discriminator]string {
	m := map[anchor.Discriminator]string{}
	for _, e := range []drift.Event{
		new(drift.OrderRecord), new(drift.OrderActionRecord), new(drift.DepositRecord), new(drift.FundingRateRecord),
		new(drift.FundingPaymentRecord), new(drift.LiquidationRecord), new(drift.SwapRecord), new(drift.SettlePnlRecord),
		new(drift.LPRecord), new(drift.InsuranceFundRecord), new(drift.InsuranceFundStakeRecord),
		new(drift.LPMintRedeemRecord), new(drift.NewUserRecord),
	} {
		m[e.Discriminator()] = e.EventName()
	}
	return m
}()

func eventName(e []byte) string { return eventNames[anchor.Discriminator(e[:8])] }

// stateAddress is the State account, in every Drift transaction's keys: a PDA, found once.
var stateAddress = sync.OnceValue(func() string { return drift.StateAddress().String() })

// logs are what the runtime logs for a transaction: the program stack, the instruction's text,
// the events, and the compute lines, or a cut.
type logs struct {
	lines []string
	depth int
	units uint64
}

func (l *logs) invoke(program string) {
	l.depth++
	l.lines = append(l.lines, fmt.Sprintf("Program %s invoke [%d]", program, l.depth))
}

func (l *logs) success(program string, units uint64) {
	l.lines = append(l.lines,
		fmt.Sprintf("Program %s consumed %d of %d compute units", program, units, computeLimit-l.units),
		fmt.Sprintf("Program %s success", program))
	l.units += units
	l.depth--
}

// budget is the compute budget instruction, which the runtime logs without a compute line.
func (l *logs) budget() {
	l.lines = append(l.lines, "Program "+computeBudgetProgram+" invoke [1]", "Program "+computeBudgetProgram+" success")
	l.units += 150
}

func (l *logs) log(text string) { l.lines = append(l.lines, "Program log: "+text) }

// render is one of the records' transactions as getBlock answers it. recent is the blockhash the
// transaction names (its parent block's).
func (c *Chain) render(b *block, x *tx, recent string) txJSON {
	sig := []byte(x.sig)
	evs := x.events()
	var first string
	if len(evs) > 0 {
		first = eventName(evs[0])
	}
	trading := first == "OrderRecord" || first == "OrderActionRecord"
	proxy := trading && x.first == 0 && c.chance("proxy", sig, c.cfg.ProxyEvery)
	vault := x.first > 0
	benignCut := !x.cut && c.chance("truncated", sig, c.cfg.TruncatedEvery)

	keys := []string{c.wallet("payer", sig), c.wallet("user", sig), stateAddress(), computeBudgetProgram}
	driftAt := len(keys)
	keys = append(keys, drift.ProgramID)
	outer := ""
	switch {
	case proxy:
		outer = jitProxyProgram
	case vault:
		outer = txlog.VaultProgramID
	}
	outerAt := -1
	if outer != "" {
		outerAt = len(keys)
		keys = append(keys, outer)
	}
	l := &logs{}
	l.budget()
	if outer != "" {
		l.invoke(outer)
		if proxy {
			l.log("Instruction: Jit")
		} else {
			l.log("Instruction: Deposit")
			for i := range x.first {
				h := c.hash("vault event", sig, []byte{byte(i)})
				d := anchor.EventDiscriminator("VaultDepositorRecord")
				l.lines = append(l.lines, "Program data: "+base64.StdEncoding.EncodeToString(append(d[:], h[:]...)))
			}
		}
	}
	l.invoke(drift.ProgramID)
	name := instructionNames[first]
	if name == "" {
		name = strings.TrimSuffix(first, "Record")
	}
	l.log("Instruction: " + name)
	inner := []instructionJSON{}
	switch first {
	case "DepositRecord":
		// The deposit moves tokens: a CPI into the token program, whose lines are no Drift event.
		tokenAt := len(keys)
		keys = append(keys, tokenProgram)
		l.invoke(tokenProgram)
		l.log("Instruction: Transfer")
		l.success(tokenProgram, 4645)
		inner = append(inner, instructionJSON{ProgramIDIndex: tokenAt, Accounts: []int{1, 2, 0}, Data: "3DdGGhkhJbjm", StackHeight: ptr(l.depth + 1)})
	case "SwapRecord":
		// The swap's route runs inside Drift's call; its "Program data: " line holds a Drift event's
		// bytes, which a parser that ignores the program stack would take for Drift's.
		jupAt := len(keys)
		keys = append(keys, jupiterProgram)
		l.invoke(jupiterProgram)
		l.lines = append(l.lines, logLine(c.decoy(b, "route", sig)))
		l.success(jupiterProgram, 60000)
		inner = append(inner, instructionJSON{ProgramIDIndex: jupAt, Accounts: []int{0, 1}, Data: "PrpFmsY4d26dKbdKMofZ8", StackHeight: ptr(l.depth + 1)})
	}
	for _, e := range evs {
		l.lines = append(l.lines, logLine(e))
	}
	units := uint64(20_000 + 12_000*len(evs))
	switch {
	case x.cut:
		l.lines = append(l.lines, "Log truncated")
	case benignCut:
		l.log("post-trade margin check: total collateral and margin requirement of the accounts")
		l.lines = append(l.lines, "Log truncated")
	default:
		l.success(drift.ProgramID, units)
		if outer != "" {
			l.success(outer, 15_000)
		}
	}
	ixData := anchor.InstructionDiscriminator(snake(name))
	top := instructionJSON{ProgramIDIndex: driftAt, Accounts: []int{0, 1, 2}, Data: base58.Encode(ixData[:])}
	var innerIx []innerJSON
	if outer != "" {
		top.ProgramIDIndex = outerAt
		inner = append([]instructionJSON{{ProgramIDIndex: driftAt, Accounts: []int{0, 1, 2}, Data: base58.Encode(ixData[:]), StackHeight: ptr(2)}}, inner...)
	}
	if len(inner) > 0 {
		innerIx = []innerJSON{{Index: 1, Instructions: inner}}
	}
	return c.txJSON(x.sig, keys, []instructionJSON{budgetIx(), top}, innerIx, l, recent, false)
}

func budgetIx() instructionJSON {
	return instructionJSON{ProgramIDIndex: 3, Accounts: []int{}, Data: "K1FDJ7"}
}

func ptr(v int) *int { return &v }

// snake is an instruction's name as anchor hashes it: PlacePerpOrder -> place_perp_order.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// txJSON assembles a transaction: the fee payer signs, the programs are read-only.
func (c *Chain) txJSON(sig string, keys []string, ixs []instructionJSON, inner []innerJSON, l *logs, recent string, failed bool) txJSON {
	readonly := 0
	for _, k := range keys {
		if isProgram(k) {
			readonly++
		}
	}
	pre, post := make([]uint64, len(keys)), make([]uint64, len(keys))
	for i, k := range keys {
		switch {
		case i == 0:
			h := c.hash("balance", []byte(sig))
			pre[i] = 100_000_000 + binary.LittleEndian.Uint64(h[:8])%10_000_000_000
			post[i] = pre[i] - fee
		case isProgram(k):
			pre[i], post[i] = 1_141_440, 1_141_440
		default:
			pre[i], post[i] = lamports(4376), lamports(4376)
		}
	}
	if inner == nil {
		inner = []innerJSON{}
	}
	t := txJSON{
		Transaction: transactionJSON{
			Signatures: []string{sig},
			Message: messageJSON{
				AccountKeys:     keys,
				Header:          headerJSON{NumRequiredSignatures: 1, NumReadonlyUnsignedAccounts: readonly},
				RecentBlockhash: recent,
				Instructions:    ixs,
			},
		},
		Meta: metaJSON{
			Err: json.RawMessage("null"), Status: json.RawMessage(`{"Ok":null}`), Fee: fee,
			PreBalances: pre, PostBalances: post, InnerInstructions: inner, LogMessages: l.lines,
			PreTokenBalances: []struct{}{}, PostTokenBalances: []struct{}{}, Rewards: []struct{}{},
			LoadedAddresses: loadedJSON{Writable: []string{}, Readonly: []string{}}, ComputeUnitsConsumed: l.units,
		},
	}
	if failed {
		e := json.RawMessage(`{"InstructionError":[1,{"Custom":6003}]}`)
		t.Meta.Err, t.Meta.Status = e, json.RawMessage(`{"Err":`+string(e)+`}`)
	}
	return t
}

func isProgram(k string) bool {
	switch k {
	case computeBudgetProgram, tokenProgram, jitProxyProgram, jupiterProgram, whirlpoolProgram, drift.ProgramID, txlog.VaultProgramID:
		return true
	}
	return false
}

// decoy is a Drift event the chain makes up for what must not be indexed: a deposit of a made-up
// account, distinct from every record (its depositRecordId is far above the simulator's), so that
// a test sees it if an indexer wrongly takes it.
func (c *Chain) decoy(b *block, label string, key []byte) []byte {
	h := c.hash("decoy/"+label, slotBytes(b.slot), key)
	ev := &drift.DepositRecord{
		TS:                              b.time,
		UserAuthority:                   c.key("decoy authority", h[:]),
		User:                            c.key("decoy user", h[:]),
		Direction:                       drift.DepositDirectionDeposit,
		DepositRecordID:                 DecoyDepositIDs + binary.LittleEndian.Uint64(h[:8])%1_000_000_000,
		Amount:                          1_000_000 + binary.LittleEndian.Uint64(h[8:16])%1_000_000_000,
		OraclePrice:                     1_000_000,
		MarketCumulativeDepositInterest: borsh.U128(10_000_000_000),
		MarketCumulativeBorrowInterest:  borsh.U128(10_000_000_000),
	}
	data, err := ev.MarshalBinary()
	if err != nil {
		panic(err) // a fixed, valid event
	}
	return data
}

// DecoyDepositIDs is the lowest depositRecordId of the chain's decoys (the deposits in failed
// transactions and in other programs' logs): no record of the simulator comes near it.
const DecoyDepositIDs = 9_000_000_000_000_000

// failedTx is a Drift transaction that failed: its events are in its log, but the runtime rolled
// them back.
func (c *Chain) failedTx(b *block, recent string) txJSON {
	key := slotBytes(b.slot)
	sig := c.signature("failed", key)
	keys := []string{c.wallet("payer", []byte(sig)), c.wallet("user", []byte(sig)), stateAddress(), computeBudgetProgram, drift.ProgramID}
	l := &logs{}
	l.budget()
	l.invoke(drift.ProgramID)
	l.log("Instruction: Withdraw")
	l.lines = append(l.lines, logLine(c.decoy(b, "failed", key)))
	l.log("AnchorError occurred. Error Code: InsufficientCollateral. Error Number: 6003. Error Message: Insufficient collateral.")
	l.lines = append(l.lines,
		fmt.Sprintf("Program %s consumed %d of %d compute units", drift.ProgramID, 41_200, computeLimit-150),
		fmt.Sprintf("Program %s failed: custom program error: 0x1773", drift.ProgramID))
	l.units += 41_200
	ix := anchor.InstructionDiscriminator("withdraw")
	return c.txJSON(sig, keys, []instructionJSON{budgetIx(), {ProgramIDIndex: 4, Accounts: []int{0, 1, 2}, Data: base58.Encode(ix[:])}}, nil, l, recent, true)
}

// otherTx is another program's transaction: a pool swap whose "Program data: " lines are its
// own, one of them bytes of a Drift event.
func (c *Chain) otherTx(b *block, recent string) txJSON {
	key := slotBytes(b.slot)
	sig := c.signature("other", key)
	keys := []string{c.wallet("payer", []byte(sig)), c.wallet("pool", key), computeBudgetProgram, whirlpoolProgram}
	l := &logs{}
	l.budget()
	l.invoke(whirlpoolProgram)
	l.log("Instruction: Swap")
	h := c.hash("other data", key)
	l.lines = append(l.lines, "Program data: "+base64.StdEncoding.EncodeToString(h[:]))
	l.lines = append(l.lines, logLine(c.decoy(b, "other", key)))
	l.success(whirlpoolProgram, 38_000)
	ixs := []instructionJSON{{ProgramIDIndex: 2, Accounts: []int{}, Data: "K1FDJ7"}, {ProgramIDIndex: 3, Accounts: []int{0, 1}, Data: "59p8WydnSZt"}}
	return c.txJSON(sig, keys, ixs, nil, l, recent, false)
}

// blockJSON renders a sealed block; details is getBlock's transactionDetails.
func (c *Chain) blockJSON(b *block, details string, rewards bool) blockJSON {
	recent := c.blockhash(b.parent)
	out := blockJSON{
		BlockHeight: b.height, BlockTime: b.time, Blockhash: c.blockhash(b.slot),
		ParentSlot: b.parent, PreviousBlockhash: recent,
	}
	if rewards {
		out.Rewards = &[]string{}
	}
	key := slotBytes(b.slot)
	var txs []txJSON
	if c.chance("other", key, c.cfg.OtherEvery) {
		txs = append(txs, c.otherTx(b, recent))
	}
	for i := range b.txs {
		txs = append(txs, c.render(b, &b.txs[i], recent))
		if i == 0 && c.chance("failed", key, c.cfg.FailedEvery) {
			txs = append(txs, c.failedTx(b, recent))
		}
	}
	switch details {
	case "signatures":
		sigs := make([]string, len(txs))
		for i := range txs {
			sigs[i] = txs[i].Transaction.Signatures[0]
		}
		out.Signatures = &sigs
	case "none":
	default:
		if txs == nil {
			txs = []txJSON{}
		}
		out.Transactions = &txs
	}
	return out
}
