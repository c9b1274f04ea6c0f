package simchain_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/chain/txlog"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// recordKey is a record's identity: its topic and (txSig, txSigIndex).
type recordKey struct {
	topic string
	sig   string
	index int
}

// meant is what the simulator meant on the event topics, each record as JSON with what no event
// carries blanked.
func meant(tb testing.TB, msgs []events.Message) map[recordKey]string {
	tb.Helper()
	out := map[recordKey]string{}
	for _, m := range msgs {
		if !simchain.EventTopic(m.Topic) {
			continue
		}
		rec, err := events.Decode(m.Topic, m.Value)
		if err != nil {
			tb.Fatal(err)
		}
		tx := txOfRecord(rec)
		out[recordKey{m.Topic, tx.TxSig, tx.TxSigIndex}] = mustJSON(tb, rec)
	}
	return out
}

func txOfRecord(r events.Record) events.Tx {
	return reflect.ValueOf(r).Elem().FieldByName("Tx").Interface().(events.Tx)
}

// indexed is what an indexer makes of the chain: every block of getBlocks, its transactions'
// logs through txlog.Parse, the events through the records mapping with the catalogue of the
// market accounts, new users completed from their accounts.
type indexed struct {
	records    map[recordKey]string
	failed     int // failed transactions seen
	foreign    int // transactions that do not invoke Drift at all
	proxied    int // Drift called at depth 2
	truncated  int // logs ending in "Log truncated"
	prefixes   map[txlog.Prefix]int
	vaultFirst int // events after vault events
}

func (w *world) catalogue(tb testing.TB) *records.Catalogue {
	tb.Helper()
	var keys []string
	for _, m := range sim.Markets() {
		if m.Type == events.MarketTypePerp {
			keys = append(keys, drift.PerpMarketAddress(uint16(m.Index)).String())
		} else {
			keys = append(keys, drift.SpotMarketAddress(uint16(m.Index)).String())
		}
	}
	var accts solAccounts
	w.call(tb, &accts, "getMultipleAccounts", keys, map[string]any{"encoding": "base64", "commitment": "finalized"})
	var perps []drift.PerpMarket
	var spots []drift.SpotMarket
	for i, a := range accts.Value {
		if a == nil || a.Owner != drift.ProgramID || a.Data[1] != "base64" || a.Space != len(mustB64(tb, a.Data[0])) {
			tb.Fatalf("market account %s: %+v", keys[i], a)
		}
		data := mustB64(tb, a.Data[0])
		var p drift.PerpMarket
		if err := p.UnmarshalBinary(data); err == nil {
			perps = append(perps, p)
			continue
		}
		var s drift.SpotMarket
		if err := s.UnmarshalBinary(data); err != nil {
			tb.Fatalf("account %s is no market: %v", keys[i], err)
		}
		spots = append(spots, s)
	}
	cat, err := records.NewCatalogue(perps, spots)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

func mustB64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (w *world) index(tb testing.TB) *indexed {
	tb.Helper()
	m := records.New(w.catalogue(tb))
	out := &indexed{records: map[recordKey]string{}, prefixes: map[txlog.Prefix]int{}}
	var newUsers []*events.NewUser
	var prev *solBlock
	var prevSlot int64
	for _, slot := range w.slots(tb) {
		b := w.block(tb, slot)
		if prev != nil && (b.ParentSlot != prevSlot || b.PreviousBlockhash != prev.Blockhash || *b.BlockHeight != *prev.BlockHeight+1) {
			tb.Fatalf("slot %d: parent %d %s height %d after slot %d %s height %d", slot, b.ParentSlot,
				b.PreviousBlockhash, *b.BlockHeight, prevSlot, prev.Blockhash, *prev.BlockHeight)
		}
		prev, prevSlot = b, slot
		for _, t := range b.Transactions {
			checkShape(tb, slot, &t)
			logs := t.Meta.LogMessages
			if !slices.ContainsFunc(logs, func(l string) bool { return strings.HasPrefix(l, "Program "+drift.ProgramID+" invoke") }) {
				out.foreign++
			}
			if slices.Contains(logs, "Program "+drift.ProgramID+" invoke [2]") {
				out.proxied++
			}
			if t.failed() {
				out.failed++
			}
			res, err := txlog.Parse(logs, t.failed())
			if err != nil {
				tb.Fatalf("slot %d tx %s: %v", slot, t.Transaction.Signatures[0], err)
			}
			if res.Truncated {
				out.truncated++
			}
			if res.VaultEvents > 0 {
				out.vaultFirst++
			}
			sig := t.Transaction.Signatures[0]
			for _, e := range res.Events {
				out.prefixes[e.Prefix]++
				mapped, ok, err := m.Map(e.Event, records.Context{TxSig: sig, TxSigIndex: e.TxSigIndex, Slot: slot})
				if err != nil || !ok {
					tb.Fatalf("slot %d tx %s event %d: %v %v", slot, sig, e.TxSigIndex, ok, err)
				}
				if got := txOfRecord(mapped.Record); got.Ts != *b.BlockTime {
					tb.Fatalf("slot %d: record at %d in a block of time %d", slot, got.Ts, *b.BlockTime)
				}
				if nu, ok := mapped.Record.(*events.NewUser); ok {
					newUsers = append(newUsers, nu)
					continue
				}
				out.add(tb, mapped)
			}
		}
	}
	for _, nu := range newUsers {
		w.completeNewUser(tb, nu)
		out.add(tb, records.Mapped{Topic: events.TopicNewUsers, Record: nu})
	}
	return out
}

// checkShape checks what a client relies on in a transaction's JSON.
func checkShape(tb testing.TB, slot int64, t *solTx) {
	tb.Helper()
	msg, meta := &t.Transaction.Message, &t.Meta
	n := len(msg.AccountKeys)
	ok := len(t.Transaction.Signatures) == 1 && msg.Header.NumRequiredSignatures == 1 && string(t.Version) == "0" &&
		len(meta.PreBalances) == n && len(meta.PostBalances) == n && meta.Fee == meta.PreBalances[0]-meta.PostBalances[0] &&
		meta.ComputeUnitsConsumed != nil && meta.LoadedAddresses.Writable != nil && meta.LoadedAddresses.Readonly != nil &&
		len(meta.Status) > 0 && msg.RecentBlockhash != ""
	for _, ix := range msg.Instructions {
		ok = ok && ix.ProgramIDIndex < n
		for _, a := range ix.Accounts {
			ok = ok && a < n
		}
	}
	for _, in := range meta.InnerInstructions {
		for _, ix := range in.Instructions {
			ok = ok && ix.ProgramIDIndex < n && ix.StackHeight != nil && *ix.StackHeight >= 2
		}
	}
	if !ok {
		tb.Fatalf("slot %d: transaction %s is not shaped as a node's: %+v", slot, t.Transaction.Signatures, t)
	}
}

func (x *indexed) add(tb testing.TB, m records.Mapped) {
	tb.Helper()
	tx := txOfRecord(m.Record)
	k := recordKey{m.Topic, tx.TxSig, tx.TxSigIndex}
	if _, dup := x.records[k]; dup {
		tb.Fatalf("record %v twice", k)
	}
	x.records[k] = mustJSON(tb, m.Record)
}

// completeNewUser fetches a new user's accounts and maps them into the record, as the indexer does.
func (w *world) completeNewUser(tb testing.TB, nu *events.NewUser) {
	tb.Helper()
	user, share, escrow, err := records.NewUserAccountAddresses(nu)
	if err != nil {
		tb.Fatal(err)
	}
	var accts solAccounts
	w.call(tb, &accts, "getMultipleAccounts", []string{user.String(), share.String(), escrow.String()}, map[string]any{"encoding": "base64"})
	var a records.NewUserAccounts
	if v := accts.Value[0]; v != nil {
		a.User = new(drift.User)
		if err := a.User.UnmarshalBinary(mustB64(tb, v.Data[0])); err != nil {
			tb.Fatal(err)
		}
	}
	if v := accts.Value[1]; v != nil {
		a.RevenueShare = new(records.RevenueShare)
		if err := a.RevenueShare.UnmarshalBinary(mustB64(tb, v.Data[0])); err != nil {
			tb.Fatal(err)
		}
	}
	if v := accts.Value[2]; v != nil {
		a.RevenueShareEscrow = new(records.RevenueShareEscrow)
		if err := a.RevenueShareEscrow.UnmarshalBinary(mustB64(tb, v.Data[0])); err != nil {
			tb.Fatal(err)
		}
	}
	if err := a.Apply(nu); err != nil {
		tb.Fatal(err)
	}
}

// TestTheChainCarriesEveryRecord indexes a simulated window from the chain's JSON-RPC and finds
// every record the simulator meant, and nothing else: not the failed transactions' events, not
// the Drift-looking bytes of other programs, not the market states (accounts, not events).
func TestTheChainCarriesEveryRecord(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 1}, 20)
	want := meant(t, w.msgs)
	got := w.index(t)
	for k, v := range want {
		g, ok := got.records[k]
		switch {
		case !ok:
			t.Errorf("%v: missing", k)
		case g != v:
			t.Errorf("%v:\ngot  %s\nwant %s", k, g, v)
		}
	}
	for k, v := range got.records {
		if _, ok := want[k]; !ok {
			t.Errorf("%v: indexed but never meant: %s", k, v)
		}
	}
	t.Logf("%d records; %d failed, %d foreign, %d proxied, %d truncated txs; prefixes %v",
		len(got.records), got.failed, got.foreign, got.proxied, got.truncated, got.prefixes)
	for name, n := range map[string]int{
		"failed": got.failed, "foreign": got.foreign, "proxied": got.proxied, "truncated": got.truncated,
		"Program data": got.prefixes[txlog.PrefixData], "Program log": got.prefixes[txlog.PrefixLog],
	} {
		if n == 0 {
			t.Errorf("no %s transaction or line in the window", name)
		}
	}
	for _, m := range w.direct {
		if simchain.EventTopic(m.Topic) || m.Topic == events.TopicMarketStates {
			t.Fatalf("%s passed to the direct writer", m.Topic)
		}
	}
	if len(w.direct) == 0 {
		t.Error("no account snapshots, vaults or params passed on")
	}
}

// TestVaultEventsComeFirst writes a transaction whose first Drift event has txSigIndex 2: the
// chain logs two vault events before Drift's call, and the parser numbers the Drift event 2.
func TestVaultEventsComeFirst(t *testing.T) {
	c := simchain.New(simchain.Config{Seed: 3})
	dep := sampleDeposit(t)
	dep.TxSigIndex = 2
	msg, err := events.Encode(events.TopicDeposits, dep)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Writer(nil).Write(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	c.Seal()
	w := serve(t, c)
	b := w.block(t, dep.Slot)
	var found bool
	for _, tx := range b.Transactions {
		if tx.Transaction.Signatures[0] != dep.TxSig {
			continue
		}
		found = true
		res, err := txlog.Parse(tx.Meta.LogMessages, tx.failed())
		if err != nil {
			t.Fatal(err)
		}
		if res.VaultEvents != 2 || len(res.Events) != 1 || res.Events[0].TxSigIndex != 2 {
			t.Fatalf("vault events %d, events %+v", res.VaultEvents, res.Events)
		}
	}
	if !found {
		t.Fatal("the transaction is not in its block")
	}
}

func serve(tb testing.TB, c *simchain.Chain) *world {
	tb.Helper()
	srv := httptestServer(tb, c)
	return &world{chain: c, url: srv}
}

// sampleDeposit is a valid deposit record of the simulator's markets.
func sampleDeposit(tb testing.TB) *events.Deposit {
	tb.Helper()
	ts := windowStart.Unix()
	return &events.Deposit{
		Tx:     events.Tx{Ts: ts, TxSig: "4vJ9JU1bJJE96FWSJKvHsmmFADCg4gpZQff4P3bkLKi7zK1Mq4E9jzDQwm2GtXbTvyZjXvcxY6qgKZo2gYhhYwbW", Slot: 300_000_000},
		Amount: "1000000", OraclePrice: "1000000", MarketDepositBalance: "1", MarketWithdrawBalance: "0",
		MarketCumulativeDepositInterest: "10000000000", MarketCumulativeBorrowInterest: "10000000000",
		TotalDepositsAfter: "1000000", TotalWithdrawsAfter: "0", DepositRecordID: "1",
		UserAuthority: "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM", User: "Fe4hMZrg7R97ZrbSScWBXUpQwZB9gzBnhodTCGyjkHsG",
		Direction: events.DepositDirectionDeposit, Explanation: events.DepositExplanationNone, MarketIndex: 0, Symbol: "USDC",
	}
}

// TestGetBlocksListsNoSkippedSlot: every slot between the first and the tip is either listed by
// getBlocks and has a block, or unlisted and answered -32007.
func TestGetBlocksListsNoSkippedSlot(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 2}, 3)
	slots := w.slots(t)
	if len(slots) < 10 {
		t.Fatalf("%d blocks", len(slots))
	}
	listed := map[int64]bool{}
	for _, s := range slots {
		listed[s] = true
	}
	skipped := 0
	for s := slots[0]; s <= slots[len(slots)-1]; s++ {
		var b solBlock
		r := w.call(t, &b, "getBlock", s, blockConfig)
		switch {
		case listed[s] && r.Error != nil:
			t.Fatalf("listed slot %d: %s", s, r.Error.Message)
		case !listed[s] && (r.Error == nil || r.Error.Code != -32007 ||
			r.Error.Message != fmt.Sprintf("Slot %d was skipped, or missing due to ledger jump to recent snapshot", s)):
			t.Fatalf("unlisted slot %d: %+v", s, r.Error)
		case !listed[s]:
			skipped++
		}
	}
	if skipped == 0 {
		t.Error("no skipped slot in the window")
	}
	var b solBlock
	if r := w.call(t, &b, "getBlock", slots[len(slots)-1]+1, blockConfig); r.Error == nil || r.Error.Code != -32004 {
		t.Errorf("getBlock past the tip: %+v", r.Error)
	}
}

// TestMarketAccountsFollowTheStates: the market accounts hold the newest state written, and give
// the simulator's symbols.
func TestMarketAccountsFollowTheStates(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 4}, 2)
	cat := w.catalogue(t)
	if !reflect.DeepEqual(cat.Markets(), mustCatalogue(t).Markets()) {
		t.Fatalf("catalogue %v, want the simulator's %v", cat.Markets(), sim.Markets())
	}
	last := map[string]*events.MarketState{}
	for _, m := range w.msgs {
		if m.Topic == events.TopicMarketStates {
			r, err := events.Decode(m.Topic, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			ms := r.(*events.MarketState)
			last[string(ms.MarketType)+ms.Symbol] = ms
		}
	}
	mapper := records.New(cat)
	for _, want := range last {
		var key solana.PublicKey
		if want.MarketType == events.MarketTypePerp {
			key = drift.PerpMarketAddress(uint16(want.MarketIndex))
		} else {
			key = drift.SpotMarketAddress(uint16(want.MarketIndex))
		}
		var a struct {
			Value *solAccount `json:"value"`
		}
		w.call(t, &a, "getAccountInfo", key.String(), map[string]any{"encoding": "base64"})
		if a.Value == nil {
			t.Fatalf("%s: no account", want.Symbol)
		}
		data := mustB64(t, a.Value.Data[0])
		var got *events.MarketState
		var err error
		if want.MarketType == events.MarketTypePerp {
			var p drift.PerpMarket
			if err := p.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			got, err = mapper.PerpMarketState(&p, want.Ts, want.Slot)
		} else {
			var s drift.SpotMarket
			if err := s.UnmarshalBinary(data); err != nil {
				t.Fatal(err)
			}
			got, err = mapper.SpotMarketState(&s, want.Ts, want.Slot)
		}
		if err != nil {
			t.Fatal(err)
		}
		if g, wnt := mustJSON(t, got), mustJSON(t, want); g != wnt {
			t.Errorf("%s:\ngot  %s\nwant %s", want.Symbol, g, wnt)
		}
	}
	if len(last) != len(sim.Markets()) {
		t.Errorf("states of %d markets", len(last))
	}
}

func mustCatalogue(tb testing.TB) *records.Catalogue {
	tb.Helper()
	cat, err := records.CatalogueOf(sim.Markets()...)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// TestRPCErrors: unknown methods, bad params and batches as a node answers them.
func TestRPCErrors(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 5}, 1)
	for _, tc := range []struct {
		method string
		params []any
		code   int
	}{
		{"getNothing", nil, -32601},
		{"getBlock", []any{"x"}, -32602},
		{"getBlock", nil, -32602},
		{"getBlock", []any{1, map[string]any{"encoding": "base58"}}, -32602},
		{"getBlocks", []any{0, 600_000}, -32602},
		{"getMultipleAccounts", []any{[]string{"not a key"}}, -32602},
		{"getAccountInfo", []any{drift.ProgramID, map[string]any{"encoding": "jsonParsed"}}, -32602},
	} {
		r := w.call(t, nil, tc.method, tc.params...)
		if r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s %v: %+v, want code %d", tc.method, tc.params, r.Error, tc.code)
		}
	}
	slots := w.slots(t)
	var b solBlock
	if r := w.call(t, &b, "getBlock", slots[0], map[string]any{"encoding": "json"}); r.Error == nil || r.Error.Code != -32015 {
		t.Errorf("getBlock without maxSupportedTransactionVersion: %+v", r.Error)
	}
	var health string
	if w.call(t, &health, "getHealth"); health != "ok" {
		t.Errorf("getHealth %q", health)
	}
	var bh struct {
		Context struct{ Slot int64 } `json:"context"`
		Value   struct {
			Blockhash            string `json:"blockhash"`
			LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
		} `json:"value"`
	}
	w.call(t, &bh, "getLatestBlockhash", map[string]any{"commitment": "finalized"})
	if tip := slots[len(slots)-1]; bh.Context.Slot != tip || bh.Value.Blockhash != w.block(t, tip).Blockhash {
		t.Errorf("getLatestBlockhash %+v at tip %d", bh, tip)
	}
	batch := postRaw(t, w.url, `[{"jsonrpc":"2.0","id":1,"method":"getSlot"},{"jsonrpc":"2.0","id":"b","method":"getBlockHeight"},{"jsonrpc":"2.0","id":3,"method":"nope"}]`)
	var rs []rpcResponse
	if err := json.Unmarshal(batch, &rs); err != nil || len(rs) != 3 {
		t.Fatalf("batch: %v %s", err, batch)
	}
	if rs[0].Error != nil || rs[1].Error != nil || string(rs[1].ID) != `"b"` || rs[2].Error == nil || rs[2].Error.Code != -32601 {
		t.Errorf("batch answers %s", batch)
	}
}

// TestServesWhileWritten reads blocks while the simulator writes, as the indexer follows a live
// chain: the tip only rises, and every block under it is served.
func TestServesWhileWritten(t *testing.T) {
	c := simchain.New(simchain.Config{Seed: 9})
	url := httptestServer(t, c)
	w := c.Writer(nil)
	s := sim.New(sim.Config{Seed: 9, Authorities: 20, FillsPerMinute: 120})
	done := make(chan error, 1)
	go func() {
		var batch []events.Message
		err := s.Generate(windowStart, windowStart.Add(3*time.Minute), func(m events.Message) error {
			batch = append(batch, m)
			if len(batch) < 50 {
				return nil
			}
			err := w.Write(t.Context(), batch...)
			batch = batch[:0]
			return err
		})
		if err == nil {
			err = w.Write(t.Context(), batch...)
		}
		done <- err
	}()
	var last int64
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		var tip int64
		call(t, url, &tip, "getSlot")
		if tip < last {
			t.Fatalf("tip %d after %d", tip, last)
		}
		if tip > 0 {
			var b solBlock
			if r := call(t, url, &b, "getBlock", tip, blockConfig); r.Error != nil {
				t.Fatalf("tip %d: %s", tip, r.Error.Message)
			}
		}
		last = tip
	}
	if last == 0 {
		t.Fatal("no block sealed while writing")
	}
}

// TestRetention: a chain that keeps its newest blocks, or was told to prune below a slot, answers
// for older ones as a pruned node does, and lists only what it has.
func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  simchain.Config
		cut  func(t *testing.T, slots []int64) int64 // PruneBefore's slot; nil: no call
	}{
		{"newest 10", simchain.Config{Seed: 10, RetainBlocks: 10}, nil},
		{"before a block", simchain.Config{Seed: 10}, func(t *testing.T, slots []int64) int64 { return slots[len(slots)/2] }},
		{"between blocks", simchain.Config{Seed: 10}, func(t *testing.T, slots []int64) int64 {
			for i := 1; i < len(slots); i++ {
				if slots[i]-1 > slots[i-1] {
					return slots[i] - 1
				}
			}
			t.Fatal("no slot without a block")
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := mustWorld(t, tc.cfg, 2)
			slots := w.slots(t)
			if tc.cut == nil {
				if len(slots) != 10 {
					t.Fatalf("%d blocks kept", len(slots))
				}
				if h := *w.block(t, slots[0]).BlockHeight; h <= 10 {
					t.Errorf("the first kept block has height %d: heights count the pruned blocks too", h)
				}
			} else {
				cut := tc.cut(t, slots)
				at, _ := slices.BinarySearch(slots, cut)
				height := *w.block(t, slots[at]).BlockHeight
				if n := w.chain.PruneBefore(cut); n != at || at == 0 {
					t.Fatalf("PruneBefore(%d) dropped %d blocks, want %d (more than none)", cut, n, at)
				}
				if got := w.slots(t); !slices.Equal(got, slots[at:]) {
					t.Fatalf("blocks after pruning: %v, want %v", got, slots[at:])
				}
				slots = slots[at:]
				if h := *w.block(t, slots[0]).BlockHeight; h != height {
					t.Errorf("the first kept block has height %d, %d before pruning", h, height)
				}
			}
			var first int64
			w.call(t, &first, "getFirstAvailableBlock")
			if first != slots[0] {
				t.Errorf("getFirstAvailableBlock %d, want %d", first, slots[0])
			}
			var b solBlock
			r := w.call(t, &b, "getBlock", slots[0]-1, blockConfig)
			if r.Error == nil || r.Error.Code != -32001 || !strings.Contains(r.Error.Message, fmt.Sprintf("First available block: %d", slots[0])) {
				t.Fatalf("getBlock below the first available: %+v", r.Error)
			}
		})
	}
}

// TestTransactionDetails: signatures and none, as getBlock's transactionDetails asks.
func TestTransactionDetails(t *testing.T) {
	w := mustWorld(t, simchain.Config{Seed: 11}, 1)
	slot := w.slots(t)[0]
	full := w.block(t, slot)
	var sigs struct {
		Signatures   []string         `json:"signatures"`
		Transactions *json.RawMessage `json:"transactions"`
	}
	w.call(t, &sigs, "getBlock", slot, map[string]any{"transactionDetails": "signatures", "maxSupportedTransactionVersion": 0})
	if len(sigs.Signatures) != len(full.Transactions) || sigs.Transactions != nil {
		t.Fatalf("signatures %v for %d transactions", sigs.Signatures, len(full.Transactions))
	}
	for i, tx := range full.Transactions {
		if sigs.Signatures[i] != tx.Transaction.Signatures[0] {
			t.Fatalf("signature %d: %s, want %s", i, sigs.Signatures[i], tx.Transaction.Signatures[0])
		}
	}
	var none map[string]json.RawMessage
	w.call(t, &none, "getBlock", slot, map[string]any{"transactionDetails": "none"})
	if _, ok := none["transactions"]; ok || none["blockhash"] == nil {
		t.Fatalf("transactionDetails none: %v", none)
	}
}
