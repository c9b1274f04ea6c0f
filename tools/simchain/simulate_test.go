package simchain_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/base58"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/tools/simchain"
)

// Accounts of an instruction: writable, signer, read-only.
func wr(k solana.PublicKey) solana.AccountMeta {
	return solana.AccountMeta{PublicKey: k, IsWritable: true}
}
func sg(k solana.PublicKey) solana.AccountMeta {
	return solana.AccountMeta{PublicKey: k, IsSigner: true}
}
func ro(k solana.PublicKey) solana.AccountMeta { return solana.AccountMeta{PublicKey: k} }
func payer(k solana.PublicKey) solana.AccountMeta {
	return solana.AccountMeta{PublicKey: k, IsSigner: true, IsWritable: true}
}

// driftIx is a Drift instruction: the discriminator of name, then args.
func driftIx(name string, args []byte, accounts ...solana.AccountMeta) solana.Instruction {
	d := anchor.InstructionDiscriminator(name)
	return solana.Instruction{ProgramID: drift.Program(), Accounts: accounts, Data: append(d[:], args...)}
}

// tokenArgs are deposit's and withdraw's: u16 market, u64 amount, bool reduceOnly.
func tokenArgs(market uint16, amount uint64) []byte {
	b := binary.LittleEndian.AppendUint16(nil, market)
	return append(binary.LittleEndian.AppendUint64(b, amount), 0)
}

func depositIx(u simchain.User, m simchain.Market, ata solana.PublicKey) solana.Instruction {
	return driftIx("deposit", tokenArgs(m.Index, 1_000_000),
		ro(drift.StateAddress()), wr(u.PDA), wr(drift.UserStatsAddress(u.Authority)), sg(u.Authority),
		wr(m.Vault), wr(ata), ro(solana.TokenProgramID), ro(m.Address))
}

func withdrawIx(u simchain.User, m simchain.Market, ata solana.PublicKey) solana.Instruction {
	return driftIx("withdraw", tokenArgs(m.Index, 1_000_000),
		ro(drift.StateAddress()), wr(u.PDA), wr(drift.UserStatsAddress(u.Authority)), sg(u.Authority),
		wr(m.Vault), ro(drift.SignerAddress()), wr(ata), ro(solana.TokenProgramID), ro(m.Address))
}

// createATAIx is the associated token program's Create of owner's account for mint.
func createATAIx(payer, owner, mint solana.PublicKey) solana.Instruction {
	return solana.Instruction{ProgramID: solana.AssociatedTokenProgramID, Data: []byte{0}, Accounts: []solana.AccountMeta{
		{PublicKey: payer, IsSigner: true, IsWritable: true}, wr(solana.AssociatedTokenAddress(owner, mint, solana.TokenProgramID)),
		ro(owner), ro(mint), ro(solana.SystemProgramID), ro(solana.TokenProgramID),
	}}
}

func placeIx(u simchain.User) solana.Instruction {
	return driftIx("place_orders", []byte{0, 0, 0, 0}, ro(drift.StateAddress()), wr(u.PDA), sg(u.Authority), ro(drift.PerpMarketAddress(0)))
}

// txWorld is a chain to send transactions to, its users picked for the cases.
type txWorld struct {
	*world
	user       simchain.User // subaccount 0, with a USDC token account
	noSOL      simchain.User // a wallet with no SOL token account
	builder    solana.PublicKey
	noBuilder  solana.PublicKey // a wallet without a RevenueShare or an escrow
	usdc, sol  simchain.Market
	blockhash  [32]byte
	lookupKeys []solana.LookupTable
}

func mustTxWorld(t *testing.T) *txWorld {
	t.Helper()
	w := &txWorld{world: accountsWorld(t)}
	w.usdc, w.sol = spotMarket(t, w.chain, "USDC"), spotMarket(t, w.chain, "SOL")
	for _, u := range w.chain.Users() {
		_, usdc := u.TokenAccounts[w.usdc.Mint]
		_, sol := u.TokenAccounts[w.sol.Mint]
		switch {
		case w.user.Authority.IsZero() && u.SubAccountID == 0 && usdc && sol:
			w.user = u
		case w.noSOL.Authority.IsZero() && !sol:
			w.noSOL = u
		}
		share := w.account(t, records.RevenueShareAddress(u.Authority)) != nil
		escrow := w.account(t, records.RevenueShareEscrowAddress(u.Authority)) != nil
		if share && w.builder.IsZero() {
			w.builder = u.Authority
		}
		if !share && !escrow && w.noBuilder.IsZero() {
			w.noBuilder = u.Authority
		}
	}
	if w.user.Authority.IsZero() || w.noSOL.Authority.IsZero() || w.builder.IsZero() || w.noBuilder.IsZero() {
		t.Fatalf("the simulated wallets lack a case: %+v", w)
	}
	var latest struct {
		Value struct {
			Blockhash string `json:"blockhash"`
		} `json:"value"`
	}
	w.call(t, &latest, "getLatestBlockhash", map[string]any{"commitment": "confirmed"})
	h, err := base58.Decode(latest.Value.Blockhash)
	if err != nil || len(h) != 32 {
		t.Fatalf("blockhash %q: %v", latest.Value.Blockhash, err)
	}
	w.blockhash = [32]byte(h)
	for _, k := range w.chain.LookupTables() {
		data, _ := w.mustAccount(t, k)
		tbl, err := solana.DecodeLookupTable(k, data)
		if err != nil {
			t.Fatal(err)
		}
		w.lookupKeys = append(w.lookupKeys, tbl)
	}
	return w
}

// tx compiles ixs for payer against the chain's lookup tables, with a compute budget first.
func (w *txWorld) tx(tb testing.TB, payer solana.PublicKey, ixs ...solana.Instruction) *solana.Transaction {
	tb.Helper()
	all := append([]solana.Instruction{solana.SetComputeUnitLimit(1_400_000), solana.SetComputeUnitPrice(50_000)}, ixs...)
	m, err := solana.CompileV0(payer, w.blockhash, all, w.lookupKeys)
	if err != nil {
		tb.Fatal(err)
	}
	return solana.NewTransaction(*m)
}

func (w *txWorld) sign(tb testing.TB, tx *solana.Transaction) *solana.Transaction {
	tb.Helper()
	var keys []solana.PublicKey
	keys = append(keys, tx.Message.Signers()...)
	for _, k := range keys {
		key, ok := w.sim.WalletKey(k.String())
		if !ok {
			tb.Fatalf("no key for %s", k)
		}
		if err := tx.Sign(key); err != nil {
			tb.Fatal(err)
		}
	}
	return tx
}

func b64(tb testing.TB, tx *solana.Transaction) string {
	tb.Helper()
	b, err := tx.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// simValue is simulateTransaction's value as a client reads it.
type simValue struct {
	Err           json.RawMessage `json:"err"`
	Logs          []string        `json:"logs"`
	Accounts      json.RawMessage `json:"accounts"`
	UnitsConsumed uint64          `json:"unitsConsumed"`
	ReturnData    json.RawMessage `json:"returnData"`
}

// simCfg is what the /tx service simulates with.
var simCfg = map[string]any{"encoding": "base64", "commitment": "processed", "sigVerify": false, "replaceRecentBlockhash": true}

// TestSimulateTransaction: each check a chain makes without running the program, as a node
// answers it.
func TestSimulateTransaction(t *testing.T) {
	w := mustTxWorld(t)
	u := w.user
	ata := u.TokenAccounts[w.usdc.Mint]
	missingSOL := solana.AssociatedTokenAddress(w.noSOL.Authority, w.sol.Mint, solana.TokenProgramID)
	ghost := simchain.User{Authority: u.Authority, SubAccountID: 7, PDA: drift.UserAddress(u.Authority, 7)}
	strange := solana.PublicKey(bytes.Repeat([]byte{7}, 32))
	stale := func(tx *solana.Transaction) { tx.Message.RecentBlockhash = [32]byte{1, 2, 3} }
	cases := []struct {
		name   string
		tx     *solana.Transaction
		edit   func(*solana.Transaction)
		cfg    map[string]any
		err    string // the value's err as JSON
		units  uint64
		inLogs []string
	}{
		{name: "deposit", tx: w.tx(t, u.Authority, depositIx(u, w.usdc, ata)), err: "null", units: 150 + 150 + 42_000,
			inLogs: []string{"Program log: Instruction: Deposit", "Program " + drift.ProgramID + " consumed 42000 of 1399700 compute units", "Program " + drift.ProgramID + " success"}},
		{name: "place orders", tx: w.tx(t, u.Authority, placeIx(u)), err: "null", units: 300 + 95_000},
		{name: "no such user", tx: w.tx(t, u.Authority, placeIx(ghost)), err: `{"InstructionError":[2,{"Custom":6234}]}`, units: 300 + 5000,
			inLogs: []string{
				"Program log: AnchorError caused by account: user. Error Code: UserNotFound. Error Number: 6234. Error Message: UserNotFound.",
				"Program " + drift.ProgramID + " failed: custom program error: 0x185a",
			}},
		{name: "withdraw to a missing token account", tx: w.tx(t, w.noSOL.Authority, withdrawIx(w.noSOL, w.sol, missingSOL)),
			err: `{"InstructionError":[2,{"Custom":3012}]}`, units: 300 + 5000,
			inLogs: []string{"Program log: AnchorError caused by account: user_token_account. Error Code: AccountNotInitialized. Error Number: 3012. Error Message: The program expected this account to be already initialized."}},
		{name: "withdraw creating the token account", err: "null", units: 300 + 21_000 + 68_000,
			tx: w.tx(t, w.noSOL.Authority, createATAIx(w.noSOL.Authority, w.noSOL.Authority, w.sol.Mint), withdrawIx(w.noSOL, w.sol, missingSOL))},
		{name: "creating a token account that exists", tx: w.tx(t, u.Authority, createATAIx(u.Authority, u.Authority, w.usdc.Mint)),
			err: `{"InstructionError":[2,"IllegalOwner"]}`, units: 300 + 21_000},
		{name: "revenue share exists", err: `{"InstructionError":[2,{"Custom":0}]}`, units: 300 + 5000,
			tx: w.tx(t, w.builder, driftIx("initialize_revenue_share", nil, wr(records.RevenueShareAddress(w.builder)),
				ro(w.builder), payer(w.builder), ro(solana.SysvarRentID), ro(solana.SystemProgramID)))},
		{name: "revenue share made", err: "null", units: 300 + 18_000,
			tx: w.tx(t, w.noBuilder, driftIx("initialize_revenue_share", nil, wr(records.RevenueShareAddress(w.noBuilder)),
				ro(w.noBuilder), payer(w.noBuilder), ro(solana.SysvarRentID), ro(solana.SystemProgramID)))},
		{name: "no escrow to approve a builder in", err: `{"InstructionError":[2,{"Custom":6324}]}`, units: 300 + 5000,
			tx: w.tx(t, w.noBuilder, driftIx("change_approved_builder", append(w.builder[:], 10, 0, 1),
				wr(records.RevenueShareEscrowAddress(w.noBuilder)), sg(w.noBuilder), payer(w.noBuilder), ro(solana.SystemProgramID)))},
		{name: "escrow made then a builder approved", err: "null", units: 300 + 26_000 + 16_000,
			tx: w.tx(t, w.noBuilder,
				driftIx("initialize_revenue_share_escrow", []byte{16, 0}, wr(records.RevenueShareEscrowAddress(w.noBuilder)), ro(w.noBuilder),
					wr(drift.UserStatsAddress(w.noBuilder)), ro(drift.StateAddress()), payer(w.noBuilder),
					ro(solana.SysvarRentID), ro(solana.SystemProgramID)),
				driftIx("change_approved_builder", append(w.builder[:], 10, 0, 1),
					wr(records.RevenueShareEscrowAddress(w.noBuilder)), sg(w.noBuilder), payer(w.noBuilder), ro(solana.SystemProgramID)))},
		{name: "unknown instruction", tx: w.tx(t, u.Authority, driftIx("no_such_instruction", nil, wr(u.PDA), sg(u.Authority))),
			err: `{"InstructionError":[2,{"Custom":101}]}`, units: 300 + 5000,
			inLogs: []string{"Program log: AnchorError occurred. Error Code: InstructionFallbackNotFound. Error Number: 101. Error Message: Fallback functions are not supported."}},
		{name: "too few accounts", tx: w.tx(t, u.Authority, driftIx("place_orders", nil, ro(drift.StateAddress()), sg(u.Authority))),
			err: `{"InstructionError":[2,{"Custom":3005}]}`, units: 300 + 5000},
		{name: "compute budget exceeded", err: `{"InstructionError":[1,"ComputationalBudgetExceeded"]}`, units: 1000,
			tx: func() *solana.Transaction {
				m, err := solana.CompileV0(u.Authority, w.blockhash, []solana.Instruction{solana.SetComputeUnitLimit(1000), depositIx(u, w.usdc, ata)}, w.lookupKeys)
				if err != nil {
					t.Fatal(err)
				}
				return solana.NewTransaction(*m)
			}()},
		{name: "stale blockhash replaced", tx: w.tx(t, u.Authority, placeIx(u)), edit: stale, err: "null", units: 300 + 95_000},
		{name: "stale blockhash", tx: w.tx(t, u.Authority, placeIx(u)), edit: stale, err: `"BlockhashNotFound"`,
			cfg: map[string]any{"encoding": "base64", "replaceRecentBlockhash": false}},
		{name: "unknown fee payer", tx: w.tx(t, strange, placeIx(u)), err: `"AccountNotFound"`},
		{name: "unknown lookup table", tx: w.tx(t, u.Authority, depositIx(u, w.usdc, ata)), err: `"AddressLookupTableNotFound"`,
			edit: func(tx *solana.Transaction) { tx.Message.AddressTableLookups[0].AccountKey = strange }},
		{name: "lookup index out of range", tx: w.tx(t, u.Authority, depositIx(u, w.usdc, ata)), err: `"InvalidAddressLookupTableIndex"`,
			edit: func(tx *solana.Transaction) {
				l := &tx.Message.AddressTableLookups[0]
				if len(l.ReadonlyIndexes) > 0 {
					l.ReadonlyIndexes[0] = 250
				} else {
					l.WritableIndexes[0] = 250
				}
			}},
		{name: "lookup table that is not one", tx: w.tx(t, u.Authority, depositIx(u, w.usdc, ata)), err: `"InvalidAddressLookupTableOwner"`,
			edit: func(tx *solana.Transaction) { tx.Message.AddressTableLookups[0].AccountKey = drift.StateAddress() }},
		{name: "unknown program", err: `"ProgramAccountNotFound"`,
			tx: w.tx(t, u.Authority, solana.Instruction{ProgramID: strange, Accounts: []solana.AccountMeta{sg(u.Authority)}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.tx.Message.AddressTableLookups) == 0 && c.edit != nil && !strings.Contains(c.name, "blockhash") {
				t.Fatal("the case's transaction looks nothing up")
			}
			if c.edit != nil {
				c.edit(c.tx)
			}
			cfg := c.cfg
			if cfg == nil {
				cfg = simCfg
			}
			var v struct {
				Context struct{ Slot int64 } `json:"context"`
				Value   simValue             `json:"value"`
			}
			if r := w.call(t, &v, "simulateTransaction", b64(t, c.tx), cfg); r.Error != nil {
				t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
			}
			if string(v.Value.Err) != c.err {
				t.Errorf("err %s, want %s; logs:\n%s", v.Value.Err, c.err, strings.Join(v.Value.Logs, "\n"))
			}
			if v.Value.UnitsConsumed != c.units {
				t.Errorf("unitsConsumed %d, want %d", v.Value.UnitsConsumed, c.units)
			}
			if string(v.Value.Accounts) != "null" || string(v.Value.ReturnData) != "null" || v.Value.Logs == nil {
				t.Errorf("accounts %s returnData %s logs %v", v.Value.Accounts, v.Value.ReturnData, v.Value.Logs)
			}
			if v.Context.Slot != w.chain.Tip() {
				t.Errorf("context slot %d, tip %d", v.Context.Slot, w.chain.Tip())
			}
			for _, l := range c.inLogs {
				if !slices.Contains(v.Value.Logs, l) {
					t.Errorf("no log line %q in\n%s", l, strings.Join(v.Value.Logs, "\n"))
				}
			}
		})
	}
}

// TestSimulateRefusals: what a node refuses to simulate at all.
func TestSimulateRefusals(t *testing.T) {
	w := mustTxWorld(t)
	u := w.user
	unsigned := b64(t, w.tx(t, u.Authority, placeIx(u)))
	signed := w.sign(t, w.tx(t, u.Authority, placeIx(u)))
	raw, err := signed.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tx   string
		cfg  map[string]any
		code int // 0: an answer
	}{
		{"unsigned with sigVerify", unsigned, map[string]any{"encoding": "base64", "sigVerify": true}, -32003},
		{"sigVerify with replaceRecentBlockhash", unsigned, map[string]any{"encoding": "base64", "sigVerify": true, "replaceRecentBlockhash": true}, -32602},
		{"signed with sigVerify", base64.StdEncoding.EncodeToString(raw), map[string]any{"encoding": "base64", "sigVerify": true}, 0},
		{"base58 by default", base58.Encode(raw), map[string]any{"sigVerify": true}, 0},
		{"not a transaction", base64.StdEncoding.EncodeToString([]byte("hello")), simCfg, -32602},
		{"not base64", "!!!", simCfg, -32602},
		{"unknown encoding", unsigned, map[string]any{"encoding": "hex"}, -32602},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v struct{ Value simValue }
			r := w.call(t, &v, "simulateTransaction", c.tx, c.cfg)
			switch {
			case c.code == 0 && r.Error != nil:
				t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
			case c.code == 0 && string(v.Value.Err) != "null":
				t.Errorf("err %s", v.Value.Err)
			case c.code != 0 && (r.Error == nil || r.Error.Code != c.code):
				t.Errorf("answer %+v, want error %d", r, c.code)
			}
		})
	}
}

// TestSendTransaction: a signed transaction that passes its preflight is recorded and its
// signature answered; the chain's accounts stay as they were.
func TestSendTransaction(t *testing.T) {
	w := mustTxWorld(t)
	u := w.user
	before, _ := w.mustAccount(t, u.PDA)
	ghost := simchain.User{Authority: u.Authority, SubAccountID: 7, PDA: drift.UserAddress(u.Authority, 7)}
	cases := []struct {
		name    string
		tx      *solana.Transaction
		cfg     map[string]any
		code    int    // 0: sent
		message string // of the error
		dataErr string // the preflight failure's data.err
		sentErr string // the recorded Err, as JSON
	}{
		{name: "signed", tx: w.sign(t, w.tx(t, u.Authority, depositIx(u, w.usdc, u.TokenAccounts[w.usdc.Mint]))), sentErr: "null"},
		{name: "unsigned", tx: w.tx(t, u.Authority, placeIx(u)), code: -32003, message: "Transaction signature verification failure"},
		{name: "preflight fails", tx: w.sign(t, w.tx(t, u.Authority, placeIx(ghost))), code: -32002,
			message: "Transaction simulation failed: Error processing Instruction 2: custom program error: 0x185a",
			dataErr: `{"InstructionError":[2,{"Custom":6234}]}`},
		{name: "preflight skipped", tx: w.sign(t, w.tx(t, u.Authority, placeIx(ghost))),
			cfg: map[string]any{"encoding": "base64", "skipPreflight": true, "maxRetries": 0}, sentErr: `{"InstructionError":[2,{"Custom":6234}]}`},
		{name: "stale blockhash", code: -32002, message: "Transaction simulation failed: Blockhash not found", dataErr: `"BlockhashNotFound"`,
			tx: func() *solana.Transaction {
				tx := w.tx(t, u.Authority, placeIx(u))
				tx.Message.RecentBlockhash = [32]byte{9}
				return w.sign(t, tx)
			}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg == nil {
				cfg = map[string]any{"encoding": "base64", "skipPreflight": false, "preflightCommitment": "confirmed"}
			}
			sent := len(w.chain.Sent())
			var sig string
			r := w.call(t, &sig, "sendTransaction", b64(t, c.tx), cfg)
			if c.code != 0 {
				if r.Error == nil || r.Error.Code != c.code || r.Error.Message != c.message {
					t.Fatalf("answer %s %+v, want error %d %q", r.Result, r.Error, c.code, c.message)
				}
				if c.dataErr != "" {
					var data simValue
					if err := json.Unmarshal(r.Error.Data, &data); err != nil {
						t.Fatalf("data %s: %v", r.Error.Data, err)
					}
					if string(data.Err) != c.dataErr || (len(data.Logs) == 0 && c.dataErr[0] == '{') {
						t.Errorf("data err %s logs %v, want %s", data.Err, data.Logs, c.dataErr)
					}
				}
				if len(w.chain.Sent()) != sent {
					t.Error("a refused transaction was recorded")
				}
				return
			}
			if r.Error != nil {
				t.Fatalf("error %d %s", r.Error.Code, r.Error.Message)
			}
			if sig != c.tx.Signature() {
				t.Errorf("signature %s, want %s", sig, c.tx.Signature())
			}
			all := w.chain.Sent()
			if len(all) != sent+1 {
				t.Fatalf("%d sent, want %d", len(all), sent+1)
			}
			last := all[len(all)-1]
			raw, _ := c.tx.MarshalBinary()
			if last.Signature != sig || !bytes.Equal(last.Raw, raw) || last.Slot != w.chain.Tip() {
				t.Errorf("recorded %s slot %d", last.Signature, last.Slot)
			}
			if got := mustJSON(t, last.Err); got != c.sentErr {
				t.Errorf("recorded err %s, want %s", got, c.sentErr)
			}
		})
	}
	after, _ := w.mustAccount(t, u.PDA)
	if !bytes.Equal(before, after) {
		t.Error("a sent transaction changed the user's account")
	}
}
