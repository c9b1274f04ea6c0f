package txbuild_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/drift/txbuild"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// sdkCasesPerKind is how many randomised cases of each builder go through both.
var sdkCasesPerKind = map[string]int{
	"deposit": 40, "withdraw": 40, "place": 60, "leverage": 20, "cancel": 30,
	"settle": 30, "builderInit": 12, "builderApprove": 24,
}

// sdkCase is one case as tx.js reads it, with what the Go side built for it.
type sdkCase struct {
	Kind           string     `json:"kind"`
	User           string     `json:"user,omitempty"`
	Spots          []string   `json:"spots,omitempty"`
	Perps          []perpJSON `json:"perps,omitempty"`
	MarketIndex    uint16     `json:"marketIndex"`
	Amount         string     `json:"amount,omitempty"`
	Order          *orderJSON `json:"order,omitempty"`
	MarginRatio    uint16     `json:"marginRatio,omitempty"`
	OrderIDs       []uint32   `json:"orderIds,omitempty"`
	MarketIndexes  []uint16   `json:"marketIndexes,omitempty"`
	Builder        string     `json:"builder,omitempty"`
	Authority      string     `json:"authority,omitempty"`
	MaxFeeTenthBps uint16     `json:"maxFeeTenthBps"`
	EscrowExists   bool       `json:"escrowExists"`
	NumOrders      uint16     `json:"numOrders"`
	Tx             *txJSON    `json:"tx,omitempty"`
	want           []solana.Instruction
	features       []string // what of the remaining accounts' rules the case meets
	wantTx         []byte
	wantErr        error
}

type perpJSON struct {
	Pubkey               string `json:"pubkey"`
	MarketIndex          uint16 `json:"marketIndex"`
	QuoteSpotMarketIndex uint16 `json:"quoteSpotMarketIndex"`
	Oracle               string `json:"oracle"`
	OracleSource         string `json:"oracleSource"`
}

type orderJSON struct {
	MarketIndex      uint16       `json:"marketIndex"`
	Direction        string       `json:"direction"`
	Type             string       `json:"type"`
	BaseAssetAmount  string       `json:"baseAssetAmount"`
	Price            string       `json:"price"`
	ReduceOnly       bool         `json:"reduceOnly"`
	PostOnly         bool         `json:"postOnly"`
	MaxLeverage      float64      `json:"maxLeverage,omitempty"`
	HighLeverageMode bool         `json:"highLeverageMode"`
	Auction          *auctionJSON `json:"auction,omitempty"`
}

type auctionJSON struct {
	Duration          uint8  `json:"duration"`
	StartPrice        string `json:"startPrice"`
	EndPrice          string `json:"endPrice"`
	OraclePriceOffset *int32 `json:"oraclePriceOffset,omitempty"`
	MaxTS             *int64 `json:"maxTs,omitempty"`
}

// txJSON is the whole transaction the instructions go into: compute budget first, as the
// service prepends it, then compiled to a v0 message with the lookup tables.
type txJSON struct {
	Payer        string      `json:"payer"`
	Blockhash    string      `json:"blockhash"`
	ComputeUnits uint32      `json:"computeUnits"`
	UnitPrice    uint64      `json:"computeUnitPrice"`
	Tables       []tableJSON `json:"tables"`
}

type tableJSON struct {
	Key       string   `json:"key"`
	Addresses []string `json:"addresses"`
}

type sdkAnswer struct {
	Ixs []struct {
		ProgramID string `json:"programId"`
		Keys      []struct {
			Pubkey     string `json:"pubkey"`
			IsSigner   bool   `json:"isSigner"`
			IsWritable bool   `json:"isWritable"`
		} `json:"keys"`
		Data string `json:"data"`
	} `json:"ixs"`
	Tx    string `json:"tx"`
	Error string `json:"error"`
}

// TestInstructionsAsSDK is the differential test against the protocol's official TypeScript SDK
// (@drift-labs/sdk 2.156.0 under node, tools/sdkdiff/tx.js): randomised markets, users and
// requests for every builder give the same instructions, data and account metas in order, as the
// DriftClient builders; and the same transaction bytes, compute budget and 0 to 2 lookup tables
// included, as web3.js's compileToV0Message and VersionedTransaction.serialize. scripts/deps
// installs node and the SDK; -short skips the test.
func TestInstructionsAsSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the TypeScript SDK under node")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var cases []*sdkCase
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range sdkCasesPerKind {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		for range sdkCasesPerKind[kind] {
			cases = append(cases, newCase(t, rng, kind))
		}
	}
	var input strings.Builder
	for _, c := range cases {
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		input.Write(line)
		input.WriteByte('\n')
	}

	out := drifttest.SDK(t, filepath.Join("..", "..", "..", ".."), "tx.js", input.String())
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<22)
	perKind, features := map[string]int{}, map[string]int{}
	var refusedAlike, withTables int
	i := 0
	for ; sc.Scan(); i++ {
		if i >= len(cases) {
			t.Fatalf("node answered more than the %d cases", len(cases))
		}
		c := cases[i]
		var got sdkAnswer
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("case %d: %v: %s", i, err, sc.Bytes())
		}
		name := fmt.Sprintf("case %d (%s)", i, c.Kind)
		if c.wantErr != nil {
			if got.Error == "" {
				t.Errorf("%s: Go refused (%v), the SDK built it", name, c.wantErr)
			} else {
				refusedAlike++
			}
			continue
		}
		if got.Error != "" {
			t.Errorf("%s: the SDK refused: %s", name, got.Error)
			continue
		}
		if sameInstructions(t, name, c.want, got) {
			perKind[c.Kind]++
			for _, f := range c.features {
				features[f]++
			}
		}
		if c.Tx != nil {
			if got.Tx != base64.StdEncoding.EncodeToString(c.wantTx) {
				t.Errorf("%s: transaction differs\nGo:  %s\nSDK: %s", name, base64.StdEncoding.EncodeToString(c.wantTx), got.Tx)
			} else if len(c.Tx.Tables) > 0 {
				withTables++
			}
		}
	}
	if i != len(cases) {
		t.Fatalf("node answered %d of %d cases", i, len(cases))
	}
	t.Logf("%d cases: alike per builder %v; %d refused by both; %d transactions compiled alike with lookup tables; alike cases meeting each rule %v",
		len(cases), perKind, refusedAlike, withTables, features)
	for _, f := range []string{"user positions", "token-2022", "prelaunch oracle written", "oracle shared", "isolated position", "being liquidated", "leverage ix", "high leverage"} {
		if features[f] == 0 {
			t.Errorf("no alike case met the rule %q", f)
		}
	}
}

func sameInstructions(t *testing.T, name string, want []solana.Instruction, got sdkAnswer) bool {
	t.Helper()
	if len(want) != len(got.Ixs) {
		t.Errorf("%s: %d instructions, the SDK %d", name, len(want), len(got.Ixs))
		return false
	}
	ok := true
	for j, w := range want {
		g := got.Ixs[j]
		if g.ProgramID != w.ProgramID.String() {
			t.Errorf("%s ix %d: program %s, the SDK %s", name, j, w.ProgramID, g.ProgramID)
			ok = false
		}
		if d := base64.StdEncoding.EncodeToString(w.Data); d != g.Data {
			t.Errorf("%s ix %d: data %s, the SDK %s", name, j, d, g.Data)
			ok = false
		}
		if len(w.Accounts) != len(g.Keys) {
			t.Errorf("%s ix %d: %d accounts, the SDK %d\nGo:  %v\nSDK: %v", name, j, len(w.Accounts), len(g.Keys), w.Accounts, g.Keys)
			ok = false
			continue
		}
		for k, a := range w.Accounts {
			gk := g.Keys[k]
			if gk.Pubkey != a.PublicKey.String() || gk.IsSigner != a.IsSigner || gk.IsWritable != a.IsWritable {
				t.Errorf("%s ix %d account %d: %s signer=%v writable=%v, the SDK %s signer=%v writable=%v",
					name, j, k, a.PublicKey, a.IsSigner, a.IsWritable, gk.Pubkey, gk.IsSigner, gk.IsWritable)
				ok = false
			}
		}
	}
	return ok
}

// world is a random exchange: spot markets 0 (the quote, no oracle) and up, perp markets whose
// oracles are sometimes a spot market's own, as SOL-PERP shares SOL's.
type world struct {
	state  txbuild.State
	spots  []string
	perps  []perpJSON
	spotIx []uint16
	perpIx []uint16
}

func key(rng *rand.Rand) solana.PublicKey {
	var k solana.PublicKey
	for i := range k {
		k[i] = byte(rng.Uint32())
	}
	return k
}

func newWorld(t *testing.T, rng *rand.Rand) *world {
	t.Helper()
	w := &world{state: txbuild.State{Perp: map[uint16]*drift.PerpMarket{}, Spot: map[uint16]*drift.SpotMarket{}}}
	nSpot := 2 + rng.IntN(5)
	var oracles []solana.PublicKey
	for i := range nSpot {
		m := &drift.SpotMarket{Pubkey: drift.SpotMarketAddress(uint16(i)), Mint: key(rng), Vault: drift.SpotMarketVaultAddress(uint16(i)), MarketIndex: uint16(i)}
		if i > 0 {
			m.Oracle = key(rng)
			oracles = append(oracles, m.Oracle)
			if rng.IntN(5) == 0 {
				m.TokenProgramFlag = 1 // Token-2022
			}
		}
		if rng.IntN(4) == 0 {
			m.Vault = key(rng) // the builders take the account's vault, not the PDA
		}
		w.state.Spot[uint16(i)] = m
		data, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		w.spots = append(w.spots, base64.StdEncoding.EncodeToString(data))
		w.spotIx = append(w.spotIx, uint16(i))
	}
	nPerp := 1 + rng.IntN(6)
	for i := range nPerp {
		idx := uint16(i)
		if rng.IntN(3) == 0 {
			idx = uint16(rng.IntN(80)) // sparse indexes
		}
		if w.state.Perp[idx] != nil {
			continue
		}
		m := &drift.PerpMarket{Pubkey: drift.PerpMarketAddress(idx), MarketIndex: idx}
		m.Amm.Oracle = key(rng)
		if len(oracles) > 0 && rng.IntN(3) == 0 {
			m.Amm.Oracle = oracles[rng.IntN(len(oracles))]
		}
		m.Amm.OracleSource = []drift.OracleSource{drift.OracleSourcePythPull, drift.OracleSourcePrelaunch, drift.OracleSourcePythLazer, drift.OracleSourceSwitchboardOnDemand}[rng.IntN(4)]
		if rng.IntN(6) == 0 {
			m.QuoteSpotMarketIndex = uint16(1 + rng.IntN(nSpot-1))
		}
		w.state.Perp[idx] = m
		src := m.Amm.OracleSource.String()
		w.perps = append(w.perps, perpJSON{
			Pubkey: m.Pubkey.String(), MarketIndex: idx, QuoteSpotMarketIndex: m.QuoteSpotMarketIndex,
			Oracle: m.Amm.Oracle.String(), OracleSource: strings.ToLower(src[:1]) + src[1:],
		})
		w.perpIx = append(w.perpIx, idx)
	}
	return w
}

// newUser is a random subaccount over the world's markets: some positions empty, some holding a
// balance, open orders, an LP share, an isolated balance or a liquidation flag.
func (w *world) newUser(rng *rand.Rand) *drift.User {
	u := &drift.User{Authority: key(rng), SubAccountID: uint16(rng.IntN(4))}
	for i := range u.SpotPositions {
		p := &u.SpotPositions[i]
		if rng.IntN(3) == 0 {
			continue
		}
		p.MarketIndex = w.spotIx[rng.IntN(len(w.spotIx))]
		switch rng.IntN(4) {
		case 0:
			p.ScaledBalance = rng.Uint64N(1e12)
		case 1:
			p.OpenOrders = uint8(1 + rng.IntN(3))
			if rng.IntN(2) == 0 {
				p.OpenBids = rng.Int64N(1e9)
			} else {
				p.OpenAsks = -rng.Int64N(1e9)
			}
		case 2:
			p.ScaledBalance = rng.Uint64N(1e12)
			p.OpenAsks = -1
		}
	}
	for i := range u.PerpPositions {
		p := &u.PerpPositions[i]
		if rng.IntN(3) == 0 {
			continue
		}
		p.MarketIndex = w.perpIx[rng.IntN(len(w.perpIx))]
		switch rng.IntN(8) {
		case 0:
			p.BaseAssetAmount = rng.Int64N(1e12) - 5e11
		case 1:
			p.QuoteAssetAmount = rng.Int64N(1e9) - 5e8
		case 2:
			p.OpenOrders = uint8(1 + rng.IntN(3))
		case 3:
			p.LpShares = rng.Uint64N(1e9)
		case 4:
			p.IsolatedPositionScaledBalance = rng.Uint64N(1e9)
			p.PositionFlag = 1
		case 5:
			p.PositionFlag = []uint8{2, 4, 6}[rng.IntN(3)]
		case 6:
			p.PositionFlag = 1 // isolated, but empty: not counted
		}
	}
	return u
}

func marshal(t *testing.T, u *drift.User) string {
	t.Helper()
	data, err := u.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(data)
}

func (w *world) pickSpot(rng *rand.Rand) uint16 {
	if rng.IntN(25) == 0 {
		return 200 // no such market: both refuse
	}
	return w.spotIx[rng.IntN(len(w.spotIx))]
}

func (w *world) pickPerp(rng *rand.Rand) uint16 {
	if rng.IntN(25) == 0 {
		return 300
	}
	return w.perpIx[rng.IntN(len(w.perpIx))]
}

func newCase(t *testing.T, rng *rand.Rand, kind string) *sdkCase {
	t.Helper()
	w := newWorld(t, rng)
	u := w.newUser(rng)
	acct := txbuild.Account{Address: drift.UserAddress(u.Authority, u.SubAccountID), User: u}
	c := &sdkCase{Kind: kind, Spots: w.spots, Perps: w.perps}
	payer := u.Authority
	var err error
	switch kind {
	case "deposit", "withdraw":
		c.User = marshal(t, u)
		c.MarketIndex = w.pickSpot(rng)
		amount := rng.Uint64()
		c.Amount = fmt.Sprint(amount)
		if kind == "deposit" {
			c.want, err = txbuild.Deposit(w.state, acct, c.MarketIndex, amount)
		} else {
			c.want, err = txbuild.Withdraw(w.state, acct, c.MarketIndex, amount)
		}
	case "place":
		c.User = marshal(t, u)
		o := txbuild.Order{
			MarketIndex:      w.pickPerp(rng),
			Direction:        drift.PositionDirection(rng.IntN(2)),
			Type:             []drift.OrderType{drift.OrderTypeMarket, drift.OrderTypeLimit}[rng.IntN(2)],
			BaseAssetAmount:  rng.Uint64N(1e13),
			ReduceOnly:       rng.IntN(3) == 0,
			PostOnly:         rng.IntN(3) == 0,
			HighLeverageMode: rng.IntN(5) == 0,
		}
		if o.Type == drift.OrderTypeLimit || rng.IntN(4) == 0 {
			o.Price = rng.Uint64N(1e11)
		}
		if rng.IntN(3) == 0 {
			o.MaxLeverage = []float64{1, 2, 3, 5, 7, 10, 20, 50, 101, 2.5, 3.3}[rng.IntN(11)]
		}
		j := &orderJSON{
			MarketIndex: o.MarketIndex, Direction: map[drift.PositionDirection]string{0: "long", 1: "short"}[o.Direction],
			Type:            map[drift.OrderType]string{drift.OrderTypeMarket: "market", drift.OrderTypeLimit: "limit"}[o.Type],
			BaseAssetAmount: fmt.Sprint(o.BaseAssetAmount), Price: fmt.Sprint(o.Price),
			ReduceOnly: o.ReduceOnly, PostOnly: o.PostOnly, MaxLeverage: o.MaxLeverage, HighLeverageMode: o.HighLeverageMode,
		}
		if o.Type == drift.OrderTypeMarket && rng.IntN(2) == 0 {
			a := &txbuild.Auction{Duration: uint8(rng.IntN(60)), StartPrice: rng.Int64N(1e11) - 5e10, EndPrice: rng.Int64N(1e11)}
			j.Auction = &auctionJSON{Duration: a.Duration, StartPrice: fmt.Sprint(a.StartPrice), EndPrice: fmt.Sprint(a.EndPrice)}
			if rng.IntN(2) == 0 {
				off := int32(rng.Int64N(1e6) - 5e5)
				a.OraclePriceOffset = borsh.Option[int32]{Some: true, Value: off}
				j.Auction.OraclePriceOffset = &off
			}
			if rng.IntN(2) == 0 {
				ts := rng.Int64N(2e9)
				a.MaxTS = borsh.Option[int64]{Some: true, Value: ts}
				j.Auction.MaxTS = &ts
			}
			o.Auction = a
		}
		c.Order = j
		c.want, err = txbuild.PlaceOrder(w.state, acct, o)
	case "leverage":
		c.User = marshal(t, u)
		c.MarketIndex = w.pickPerp(rng)
		c.MarginRatio = uint16(1 + rng.IntN(10000))
		c.want = []solana.Instruction{txbuild.SetMaxLeverage(acct, c.MarketIndex, c.MarginRatio)}
	case "cancel":
		c.User = marshal(t, u)
		for range rng.IntN(4) {
			c.OrderIDs = append(c.OrderIDs, rng.Uint32())
		}
		c.want, err = txbuild.CancelOrders(w.state, acct, c.OrderIDs)
	case "settle":
		c.User = marshal(t, u)
		for range 1 + rng.IntN(3) {
			c.MarketIndexes = append(c.MarketIndexes, w.pickPerp(rng))
		}
		c.want, err = txbuild.SettlePnl(w.state, acct, c.MarketIndexes)
	case "builderInit":
		b := key(rng)
		payer = b
		c.Builder = b.String()
		c.want = txbuild.BuilderInit(b)
	case "builderApprove":
		a, b := key(rng), key(rng)
		payer = a
		c.Authority, c.Builder = a.String(), b.String()
		c.MaxFeeTenthBps = uint16(rng.IntN(3) * rng.IntN(1000))
		c.EscrowExists = rng.IntN(2) == 0
		c.NumOrders = uint16(1 + rng.IntN(128))
		c.want = txbuild.BuilderApprove(a, b, c.MaxFeeTenthBps, c.EscrowExists, c.NumOrders)
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	if err != nil {
		var unknown *txbuild.UnknownMarketError
		if !errors.As(err, &unknown) {
			t.Fatalf("%s: %v", kind, err)
		}
		c.wantErr = err
		return c
	}
	c.features = featuresOf(w, u, c.want)
	c.Tx, c.wantTx = transaction(t, rng, payer, c.want)
	return c
}

// featuresOf names the rules of the remaining accounts that the case's instructions meet.
func featuresOf(w *world, u *drift.User, ixs []solana.Instruction) []string {
	seen := map[string]bool{}
	var f []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			f = append(f, s)
		}
	}
	spotOracles, perpOracles, prelaunch := map[solana.PublicKey]bool{}, map[solana.PublicKey]bool{}, map[solana.PublicKey]bool{}
	for _, m := range w.state.Spot {
		spotOracles[m.Oracle] = true
	}
	perps := map[solana.PublicKey]uint16{}
	for _, m := range w.state.Perp {
		perpOracles[m.Amm.Oracle] = true
		prelaunch[m.Amm.Oracle] = m.Amm.OracleSource == drift.OracleSourcePrelaunch
		perps[m.Pubkey] = m.MarketIndex
	}
	held := map[uint16]drift.PerpPosition{}
	for _, p := range u.PerpPositions {
		held[p.MarketIndex] = p
	}
	for _, ix := range ixs {
		if len(ix.Accounts) == 2 {
			add("leverage ix")
		}
		for _, a := range ix.Accounts {
			switch {
			case a.PublicKey == solana.Token2022ProgramID:
				add("token-2022")
			case a.PublicKey == drift.HighLeverageModeConfigAddress():
				add("high leverage")
			case prelaunch[a.PublicKey] && a.IsWritable:
				add("prelaunch oracle written")
			case spotOracles[a.PublicKey] && perpOracles[a.PublicKey]:
				add("oracle shared")
			}
			if i, ok := perps[a.PublicKey]; ok {
				p := held[i]
				switch {
				case p.BaseAssetAmount != 0 || p.QuoteAssetAmount != 0 || p.OpenOrders != 0 || p.LpShares != 0:
					add("user positions")
				case p.IsolatedPositionScaledBalance != 0:
					add("isolated position")
				case p.PositionFlag&6 != 0:
					add("being liquidated")
				}
			}
		}
	}
	return f
}

// transaction compiles ixs behind the compute budget into a v0 transaction with 0 to 2 lookup
// tables holding some of its accounts and others.
func transaction(t *testing.T, rng *rand.Rand, payer solana.PublicKey, ixs []solana.Instruction) (*txJSON, []byte) {
	t.Helper()
	var blockhash [32]byte
	for i := range blockhash {
		blockhash[i] = byte(rng.Uint32())
	}
	j := &txJSON{Payer: payer.String(), Blockhash: solana.PublicKey(blockhash).String(), ComputeUnits: uint32(rng.IntN(1_400_000)), UnitPrice: uint64(rng.IntN(3)) * rng.Uint64N(1e6)}
	all := []solana.Instruction{solana.SetComputeUnitLimit(j.ComputeUnits)}
	if j.UnitPrice > 0 {
		all = append(all, solana.SetComputeUnitPrice(j.UnitPrice))
	}
	all = append(all, ixs...)
	var used []solana.PublicKey
	for _, ix := range all {
		for _, a := range ix.Accounts {
			used = append(used, a.PublicKey)
		}
		used = append(used, ix.ProgramID)
	}
	var tables []solana.LookupTable
	for range rng.IntN(3) {
		tb := solana.LookupTable{Key: key(rng)}
		for _, k := range used {
			if rng.IntN(2) == 0 && !slices.Contains(tb.Addresses, k) {
				tb.Addresses = append(tb.Addresses, k)
			}
		}
		for range rng.IntN(5) {
			tb.Addresses = append(tb.Addresses, key(rng))
		}
		rng.Shuffle(len(tb.Addresses), func(a, b int) { tb.Addresses[a], tb.Addresses[b] = tb.Addresses[b], tb.Addresses[a] })
		tables = append(tables, tb)
		tj := tableJSON{Key: tb.Key.String()}
		for _, a := range tb.Addresses {
			tj.Addresses = append(tj.Addresses, a.String())
		}
		j.Tables = append(j.Tables, tj)
	}
	m, err := solana.CompileV0(payer, blockhash, all, tables)
	if err != nil {
		t.Fatal(err)
	}
	b, err := solana.NewTransaction(*m).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return j, b
}
