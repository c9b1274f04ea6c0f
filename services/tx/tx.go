// Package tx builds the protocol's transactions for the /tx routes (BETA, for test use): unsigned
// v0 transactions whose instructions, accounts and message are byte for byte what the protocol's
// own TypeScript SDK builds, from chain state read over JSON-RPC. It never holds a key: a client
// signs what it gets and may send it back through /tx/execute, which forwards it.
package tx

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/txbuild"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/fault"
)

// The compute budget as the reference sets it: the builders simulate at the most a transaction may
// use and ask for what the simulation used plus a margin; cancels take a fixed limit and no price.
const (
	MaxComputeUnits    = 1_400_000
	computeUnitsMargin = 1.3
	cancelComputeUnits = 600_000
	DefaultPriorityFee = 50_000 // µlamports per compute unit, the reference's estimate when it has none
	baseDecimals       = 9      // BASE_PRECISION: order sizes
	priceDecimals      = 6      // PRICE_PRECISION: order prices
)

// Config is how transactions are built.
type Config struct {
	// PriorityFee is the compute unit price in µlamports (0: no price instruction).
	PriorityFee uint64
	// ComputeUnits is a fixed compute unit limit for the builders; 0 asks a simulation, as the
	// reference does.
	ComputeUnits uint32
}

// Builder builds the transactions of the routes.
type Builder struct {
	chain *Chain
	rpc   *rpc.Client
	cfg   Config
}

// NewBuilder builds with chain's state, simulating and sending through c.
func NewBuilder(chain *Chain, c *rpc.Client, cfg Config) *Builder {
	return &Builder{chain: chain, rpc: c, cfg: cfg}
}

// Built is a builder route's answer.
type Built struct {
	Success bool   `json:"success"`
	Tx      string `json:"tx"`
	Message string `json:"message"`
}

// Executed is /tx/execute's answer.
type Executed struct {
	Success bool   `json:"success"`
	TxSig   string `json:"txSig"`
	Message string `json:"message"`
}

// kind is what the route builds, for its compute budget and its message.
type kind struct {
	name    string // "Deposit"
	advice  string // "Sign and send to complete deposit."
	fixedCU uint32 // cancels: a fixed limit and no price
}

// finish compiles ixs for payer with the compute budget instructions in front and m's lookup
// tables, simulates when asked (or to size the compute budget) and answers the unsigned
// transaction.
func (b *Builder) finish(ctx context.Context, m *markets, k kind, what string, payer solana.PublicKey, ixs []solana.Instruction, simulate bool) (Built, error) {
	hash, err := b.chain.Blockhash(ctx)
	if err != nil {
		return Built{}, err
	}
	compile := func(budget []solana.Instruction) ([]byte, error) {
		msg, err := solana.CompileV0(payer, hash, append(budget, ixs...), m.tables)
		if err != nil {
			return nil, invalid("the transaction cannot be built: %v", err)
		}
		raw, err := solana.NewTransaction(*msg).MarshalBinary()
		if errors.Is(err, solana.ErrTooLarge) {
			return nil, invalid("the transaction is too large for one packet: %v", err)
		}
		return raw, err
	}
	asked := simulate
	var budget []solana.Instruction
	switch {
	case k.fixedCU > 0:
		budget = []solana.Instruction{solana.SetComputeUnitLimit(k.fixedCU)}
	case b.cfg.ComputeUnits > 0:
		budget = b.budget(b.cfg.ComputeUnits)
	default:
		// Simulate at the most a transaction may use; the answer asks for what it used and a margin.
		most := b.budget(MaxComputeUnits)
		raw, err := compile(most)
		if err != nil {
			return Built{}, err
		}
		sim, err := b.simulate(ctx, raw, programs(most, ixs))
		switch {
		case err != nil && asked:
			return Built{}, err
		case err != nil:
			budget = most // the client asked not to hear of a failure
		default:
			budget = b.budget(uint32(math.Ceil(min(float64(sim.UnitsConsumed)*computeUnitsMargin, MaxComputeUnits))))
		}
		simulate = false // this simulation is also the one asked for
	}
	raw, err := compile(budget)
	if err != nil {
		return Built{}, err
	}
	if simulate {
		if _, err := b.simulate(ctx, raw, programs(budget, ixs)); err != nil {
			return Built{}, err
		}
	}
	verb := "created"
	if asked {
		verb = "created and simulated"
	}
	return Built{Success: true, Tx: base64.StdEncoding.EncodeToString(raw),
		Message: fmt.Sprintf("%s transaction %s successfully%s. %s", k.name, verb, what, k.advice)}, nil
}

func (b *Builder) budget(units uint32) []solana.Instruction {
	ixs := []solana.Instruction{solana.SetComputeUnitLimit(units)}
	if b.cfg.PriorityFee > 0 {
		ixs = append(ixs, solana.SetComputeUnitPrice(b.cfg.PriorityFee))
	}
	return ixs
}

// programs are the programs of a transaction's instructions, in order.
func programs(groups ...[]solana.Instruction) []solana.PublicKey {
	var out []solana.PublicKey
	for _, g := range groups {
		for _, ix := range g {
			out = append(out, ix.ProgramID)
		}
	}
	return out
}

// invoked are the programs of a parsed message's instructions (a program is always a static key;
// an index out of range, which parsing refuses, gives the zero key).
func invoked(m *solana.Message) []solana.PublicKey {
	out := make([]solana.PublicKey, len(m.Instructions))
	for i, ix := range m.Instructions {
		if int(ix.ProgramIDIndex) < len(m.AccountKeys) {
			out[i] = m.AccountKeys[ix.ProgramIDIndex]
		}
	}
	return out
}

// simulate runs raw on the RPC as the reference does (processed state, no signatures, the node's
// own blockhash) and turns a failure into a 400 naming the program's error; programs are those of
// the transaction's instructions.
func (b *Builder) simulate(ctx context.Context, raw []byte, programs []solana.PublicKey) (*rpc.Simulation, error) {
	sim, err := b.rpc.SimulateTransaction(ctx, raw, rpc.SimulateOptions{Commitment: rpc.Processed, ReplaceRecentBlockhash: true})
	if err != nil {
		return nil, rpcError("simulate the transaction", err)
	}
	if sim.Failed() {
		return sim, simulationError(sim, programs)
	}
	return sim, nil
}

// ProgramError is a simulation's failure: a 400 whose answer carries the program's error as the
// reference gives it (error, code, name, details).
type ProgramError struct {
	err    *fault.Error
	fields map[string]any
}

func (e *ProgramError) Error() string               { return e.err.Error() }
func (e *ProgramError) Unwrap() error               { return e.err }
func (e *ProgramError) ErrorFields() map[string]any { return e.fields }

// simulationError maps a failed simulation to the program's error when the failing instruction is
// the protocol's (programs are the instructions' programs) and its error a custom one of the IDL;
// any other failure is told as the runtime reported it.
func simulationError(sim *rpc.Simulation, programs []solana.PublicKey) error {
	var ie struct {
		InstructionError []json.RawMessage `json:"InstructionError"`
	}
	if json.Unmarshal(sim.Err, &ie) == nil && len(ie.InstructionError) == 2 {
		var index int
		var custom struct {
			Custom *uint32 `json:"Custom"`
		}
		if json.Unmarshal(ie.InstructionError[0], &index) == nil && json.Unmarshal(ie.InstructionError[1], &custom) == nil &&
			custom.Custom != nil && index >= 0 && index < len(programs) && programs[index] == drift.Program() {
			e, ok := drift.ErrorByCode(*custom.Custom)
			if !ok {
				// Anchor's own errors (an account not initialized, a missing signer) are in no
				// IDL: the program's log line names them.
				e, ok = anchorError(sim.Logs, *custom.Custom)
			}
			if ok {
				msg := fmt.Sprintf("Transaction simulation failed: %s (%s, error %d)", e.Msg, e.Name, e.Code)
				return &ProgramError{err: fault.Errorf(fault.Invalid, "%s", msg), fields: map[string]any{
					"error": e.Msg, "code": e.Code, "name": e.Name, "details": hint(e.Name)}}
			}
		}
	}
	msg := fmt.Sprintf("Transaction simulation failed: %s", strings.TrimSpace(string(sim.Err)))
	return &ProgramError{err: fault.Errorf(fault.Invalid, "%s", msg), fields: map[string]any{"error": msg, "logs": sim.Logs}}
}

// anchorLog is the line an Anchor program prints before it fails with one of its errors.
var anchorLog = regexp.MustCompile(`AnchorError (?:caused by account: \S+|occurred)\. Error Code: (\w+)\. Error Number: (\d+)\. Error Message: (.*?)\.?$`)

// anchorError is the error of number code as the logs name it.
func anchorError(logs []string, code uint32) (drift.Error, bool) {
	for _, l := range logs {
		m := anchorLog.FindStringSubmatch(l)
		if m != nil && m[2] == strconv.FormatUint(uint64(code), 10) {
			return drift.Error{Code: code, Name: m[1], Msg: m[3]}, true
		}
	}
	return drift.Error{}, false
}

// hints are the reference's advice for the errors clients meet most.
var hints = map[string]string{
	"InsufficientCollateral":       "The account does not have enough collateral for this action. Deposit more or reduce the size.",
	"MarketPaused":                 "The market is paused. Try again later.",
	"OrderDoesNotExist":            "The order does not exist: it may have been filled or cancelled already.",
	"UserAccountNotInitialized":    "The account has no User account: initialize it first.",
	"InvalidOrderSizeTooSmall":     "The order is smaller than the market's minimum order size.",
	"OrderAmountTooSmall":          "The order is smaller than the market's step size.",
	"MaxNumberOfOrders":            "The account has the most open orders it may hold: cancel some first.",
	"ReduceOnlyOrderIncreasedRisk": "A reduce-only order may only reduce the position.",
}

func hint(name string) string {
	if h, ok := hints[name]; ok {
		return h
	}
	return "Please review the error message and try again."
}

// spotMarket is the spot market of symbol, or a 400 naming it.
func (m *markets) spotMarket(symbol string) (uint16, *drift.SpotMarket, error) {
	i, ok := m.spots[strings.ToUpper(strings.TrimSpace(symbol))]
	if !ok {
		return 0, nil, invalid("Invalid symbol: %s", symbol)
	}
	return i, m.state.Spot[i], nil
}

// perpMarket is the perp market of symbol, or a 400 naming it.
func (m *markets) perpMarket(symbol string) (uint16, error) {
	i, ok := m.perps[strings.ToUpper(strings.TrimSpace(symbol))]
	if !ok {
		return 0, invalid("Invalid symbol: %s", symbol)
	}
	return i, nil
}

// stateError turns a builder's refusal of a market it does not know into a 400 naming it.
func stateError(err error) error {
	var um *txbuild.UnknownMarketError
	if errors.As(err, &um) {
		return invalid("the account names %s market %d, which the chain does not list", um.Kind, um.Index)
	}
	if errors.Is(err, txbuild.ErrTransferHook) {
		return invalid("%v", err)
	}
	return err
}

// Deposit builds a deposit (withdraw false) or a withdrawal of r.Amount of r.Symbol.
func (b *Builder) Deposit(ctx context.Context, r DepositRequest, withdraw bool) (Built, error) {
	addr, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	index, spot, err := m.spotMarket(*r.Symbol)
	if err != nil {
		return Built{}, err
	}
	amount, ok := r.Amount.units(int(spot.Decimals))
	if !ok {
		return Built{}, invalid("Invalid amount: must be a positive number with at most %d decimals for %s", spot.Decimals, drift.Name(spot.Name))
	}
	acct, err := b.chain.Account(ctx, addr)
	if err != nil {
		return Built{}, err
	}
	k := kind{name: "Deposit", advice: "Sign and send to complete deposit."}
	var ixs []solana.Instruction
	if withdraw {
		k = kind{name: "Withdraw", advice: "Sign and send to complete withdrawal."}
		ixs, err = txbuild.Withdraw(m.state, acct, index, amount)
	} else {
		ixs, err = txbuild.Deposit(m.state, acct, index, amount)
	}
	if err != nil {
		return Built{}, stateError(err)
	}
	if withdraw {
		// The SDK creates the wallet's token account when it is missing: the withdrawal needs it.
		exists, err := b.chain.Exists(ctx, txbuild.UserTokenAccount(acct.User.Authority, spot))
		if err != nil {
			return Built{}, err
		}
		if !exists {
			ixs = append([]solana.Instruction{txbuild.CreateUserTokenAccount(acct.User.Authority, spot)}, ixs...)
		}
	}
	return b.finish(ctx, m, k, " for "+drift.Name(spot.Name), acct.User.Authority, ixs, simulateOr(r.Simulate, true))
}

// PlaceOrder builds a perp order.
func (b *Builder) PlaceOrder(ctx context.Context, r OrderRequest) (Built, error) {
	addr, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	index, err := m.perpMarket(*r.Symbol)
	if err != nil {
		return Built{}, err
	}
	base, ok := r.Amount.units(baseDecimals)
	if !ok {
		return Built{}, invalid("Invalid amount: must be a positive number with at most %d decimals", baseDecimals)
	}
	o := txbuild.Order{MarketIndex: index, Direction: drift.PositionDirectionLong, Type: drift.OrderTypeMarket, BaseAssetAmount: base,
		ReduceOnly: r.ReduceOnly != nil && *r.ReduceOnly, PostOnly: r.PostOnly != nil && *r.PostOnly}
	if *r.Direction == "short" {
		o.Direction = drift.PositionDirectionShort
	}
	if *r.OrderType == "limit" {
		o.Type = drift.OrderTypeLimit
	}
	if r.Price != nil && *r.Price != "" {
		if o.Price, ok = r.Price.units(priceDecimals); !ok {
			return Built{}, invalid("Invalid price: must be a positive number with at most %d decimals", priceDecimals)
		}
	}
	if r.PositionMaxLeverage != nil {
		o.MaxLeverage = *r.PositionMaxLeverage
	}
	// builderParams are checked but take no part: the program's OrderParams have no builder fields,
	// only Swift's signed-message orders carry them, and those are not built here (useSwift).
	acct, err := b.chain.Account(ctx, addr)
	if err != nil {
		return Built{}, err
	}
	ixs, err := txbuild.PlaceOrder(m.state, acct, o)
	if err != nil {
		return Built{}, stateError(err)
	}
	return b.finish(ctx, m, kind{name: "Order", advice: "Sign and send to place the order."}, " for "+m.names[index],
		acct.User.Authority, ixs, simulateOr(r.Simulate, true))
}

// CancelOrders builds a cancel of r.OrderIDs, or of every open order when it names none.
func (b *Builder) CancelOrders(ctx context.Context, r CancelRequest) (Built, error) {
	addr, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	acct, err := b.chain.Account(ctx, addr)
	if err != nil {
		return Built{}, err
	}
	ixs, err := txbuild.CancelOrders(m.state, acct, r.OrderIDs)
	if err != nil {
		return Built{}, stateError(err)
	}
	return b.finish(ctx, m, kind{name: "Cancel orders", advice: "Sign and send to cancel the orders.", fixedCU: cancelComputeUnits}, "",
		acct.User.Authority, ixs, simulateOr(r.Simulate, true))
}

// SettlePnl builds a settlement of the named perp markets, or of every perp market.
func (b *Builder) SettlePnl(ctx context.Context, r SettleRequest) (Built, error) {
	addr, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	var indexes []uint16
	var names, bad []string
	seen := map[uint16]bool{}
	for _, s := range r.Symbols {
		i, err := m.perpMarket(s)
		if err != nil {
			bad = append(bad, strings.TrimSpace(s))
			continue
		}
		if !seen[i] {
			seen[i] = true
			indexes = append(indexes, i)
			names = append(names, m.names[i])
		}
	}
	if len(bad) > 0 {
		return Built{}, invalid("Invalid perp symbols: %s", strings.Join(bad, ", "))
	}
	if r.Symbols == nil {
		for i := range uint16(len(m.state.Perp)) {
			if _, ok := m.state.Perp[i]; ok {
				indexes = append(indexes, i)
				names = append(names, m.names[i])
			}
		}
	}
	if len(indexes) == 0 {
		return Built{}, invalid("No configured perp markets found to settle")
	}
	acct, err := b.chain.Account(ctx, addr)
	if err != nil {
		return Built{}, err
	}
	ixs, err := txbuild.SettlePnl(m.state, acct, indexes)
	if err != nil {
		return Built{}, stateError(err)
	}
	return b.finish(ctx, m, kind{name: "Settle PnL", advice: "Sign and send to settle."}, " for "+strings.Join(names, ", "),
		acct.User.Authority, ixs, simulateOr(r.Simulate, true))
}

// BuilderInit builds the builder's revenue share account.
func (b *Builder) BuilderInit(ctx context.Context, r BuilderInitRequest) (Built, error) {
	builder, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	return b.finish(ctx, m, kind{name: "Builder initialization", advice: "Sign and send to create the revenue share account."}, "",
		builder, txbuild.BuilderInit(builder), simulateOr(r.Simulate, true))
}

// BuilderApprove builds the approval of a builder by a wallet: its escrow first when it has none.
func (b *Builder) BuilderApprove(ctx context.Context, r BuilderApproveRequest) (Built, error) {
	authority, builder, fee, orders, err := r.check()
	if err != nil {
		return Built{}, err
	}
	m, err := b.chain.current()
	if err != nil {
		return Built{}, err
	}
	exists, err := b.chain.Exists(ctx, drift.RevenueShareEscrowAddress(authority))
	if err != nil {
		return Built{}, err
	}
	return b.finish(ctx, m, kind{name: "Builder approval", advice: "Sign and send to approve the builder."}, "",
		authority, txbuild.BuilderApprove(authority, builder, fee, exists, orders), simulateOr(r.Simulate, true))
}

// Execute forwards a signed transaction, after checking what can be checked here: it parses and
// every signature it needs is there and valid.
func (b *Builder) Execute(ctx context.Context, r ExecuteRequest) (Executed, error) {
	raw, err := r.check()
	if err != nil {
		return Executed{}, err
	}
	t, err := solana.ParseTransaction(raw)
	if err != nil {
		return Executed{}, invalid("signedTx is no transaction: %v", err)
	}
	if err := t.Verify(); err != nil {
		return Executed{}, invalid("signedTx is not signed: %v", err)
	}
	if simulateOr(r.Simulate, false) {
		sim, err := b.rpc.SimulateTransaction(ctx, raw, rpc.SimulateOptions{Commitment: rpc.Processed, SigVerify: true})
		if err != nil {
			return Executed{}, rpcError("simulate the transaction", err)
		}
		if sim.Failed() {
			return Executed{}, simulationError(sim, invoked(&t.Message))
		}
	}
	sig, err := b.rpc.SendTransaction(ctx, raw, false, rpc.Confirmed)
	if err != nil {
		var re *rpc.Error
		if errors.As(err, &re) && re.Code == rpc.CodeSendTransactionFailed {
			var sim rpc.Simulation
			if json.Unmarshal(re.Data, &sim) == nil && sim.Failed() {
				return Executed{}, simulationError(&sim, invoked(&t.Message))
			}
			return Executed{}, invalid("the RPC refused the transaction: %s", re.Message)
		}
		return Executed{}, rpcError("send the transaction", err)
	}
	return Executed{Success: true, TxSig: sig, Message: "Transaction executed successfully"}, nil
}
