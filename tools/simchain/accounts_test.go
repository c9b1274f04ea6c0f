package simchain_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/big"
	"slices"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/simchain"
)

// accountsWorld is the window the account tests share: long enough for every kind of record.
func accountsWorld(tb testing.TB) *world {
	tb.Helper()
	return mustWorld(tb, simchain.Config{Seed: 11}, 6)
}

// account fetches key with getAccountInfo; nil when the chain has none.
func (w *world) account(tb testing.TB, key solana.PublicKey) *solAccount {
	tb.Helper()
	var a struct {
		Value *solAccount `json:"value"`
	}
	if r := w.call(tb, &a, "getAccountInfo", key.String(), map[string]any{"encoding": "base64", "commitment": "confirmed"}); r.Error != nil {
		tb.Fatalf("getAccountInfo %s: %s", key, r.Error.Message)
	}
	return a.Value
}

func (w *world) mustAccount(tb testing.TB, key solana.PublicKey) ([]byte, *solAccount) {
	tb.Helper()
	a := w.account(tb, key)
	if a == nil {
		tb.Fatalf("no account at %s", key)
	}
	data := mustB64(tb, a.Data[0])
	if a.Space != len(data) {
		tb.Fatalf("%s: space %d for %d bytes", key, a.Space, len(data))
	}
	return data, a
}

func spotMarket(tb testing.TB, c *simchain.Chain, symbol string) simchain.Market {
	tb.Helper()
	for _, m := range c.Markets() {
		if m.Type == events.MarketTypeSpot && m.Symbol == symbol {
			return m
		}
	}
	tb.Fatalf("no spot market %s", symbol)
	return simchain.Market{}
}

// tokenAccountFields reads an SPL token account's mint, owner and amount, and checks the rest of
// its layout: no delegate, initialized, native only for wrapped SOL, no close authority.
func tokenAccountFields(data []byte) (mint, owner solana.PublicKey, amount uint64, err error) {
	if len(data) != 165 {
		return mint, owner, 0, fmt.Errorf("%d bytes, want 165", len(data))
	}
	copy(mint[:], data[0:32])
	copy(owner[:], data[32:64])
	amount = binary.LittleEndian.Uint64(data[64:72])
	native := binary.LittleEndian.Uint32(data[109:113]) == 1
	switch {
	case binary.LittleEndian.Uint32(data[72:76]) != 0:
		err = fmt.Errorf("a delegate")
	case data[108] != 1:
		err = fmt.Errorf("state %d, want initialized", data[108])
	case native != (mint == solana.MustPublicKey("So11111111111111111111111111111111111111112")):
		err = fmt.Errorf("isNative %v for mint %s", native, mint)
	case binary.LittleEndian.Uint32(data[129:133]) != 0:
		err = fmt.Errorf("a close authority")
	}
	return mint, owner, amount, err
}

// TestServedAccountsDecode: every kind of account the chain serves decodes with its program's
// layout (the generated drift types for the program's) and is owned by that program.
func TestServedAccountsDecode(t *testing.T) {
	w := accountsWorld(t)
	users := w.chain.Users()
	if len(users) == 0 {
		t.Fatal("no users")
	}
	u := users[0]
	usdc, sol := spotMarket(t, w.chain, "USDC"), spotMarket(t, w.chain, "SOL")
	var ata solana.PublicKey
	for _, v := range users {
		if k, ok := v.TokenAccounts[usdc.Mint]; ok {
			u, ata = v, k
			break
		}
	}
	if ata.IsZero() {
		t.Fatal("no user has a USDC token account")
	}
	cases := []struct {
		name   string
		key    solana.PublicKey
		owner  solana.PublicKey
		decode func([]byte) error
	}{
		{"State", drift.StateAddress(), drift.Program(), func(b []byte) error {
			var s drift.State
			if err := s.UnmarshalBinary(b); err != nil {
				return err
			}
			if s.Signer != drift.SignerAddress() || s.NumberOfMarkets != 4 || s.NumberOfSpotMarkets != 2 {
				return fmt.Errorf("signer %s, %d perp and %d spot markets", s.Signer, s.NumberOfMarkets, s.NumberOfSpotMarkets)
			}
			return nil
		}},
		{"PerpMarket", drift.PerpMarketAddress(0), drift.Program(), func(b []byte) error {
			var p drift.PerpMarket
			if err := p.UnmarshalBinary(b); err != nil {
				return err
			}
			if p.Amm.Oracle != sol.Oracle || p.QuoteSpotMarketIndex != 0 {
				return fmt.Errorf("oracle %s, want SOL's %s; quote market %d", p.Amm.Oracle, sol.Oracle, p.QuoteSpotMarketIndex)
			}
			return nil
		}},
		{"SpotMarket", usdc.Address, drift.Program(), func(b []byte) error {
			var s drift.SpotMarket
			if err := s.UnmarshalBinary(b); err != nil {
				return err
			}
			if s.Mint != usdc.Mint || s.Vault != drift.SpotMarketVaultAddress(0) || s.Oracle != usdc.Oracle || s.Decimals != 6 {
				return fmt.Errorf("mint %s vault %s oracle %s decimals %d", s.Mint, s.Vault, s.Oracle, s.Decimals)
			}
			return nil
		}},
		{"User at the records' address", u.Address, drift.Program(), func(b []byte) error {
			var a drift.User
			if err := a.UnmarshalBinary(b); err != nil {
				return err
			}
			if a.Authority != u.Authority || a.SubAccountID != u.SubAccountID {
				return fmt.Errorf("authority %s subaccount %d", a.Authority, a.SubAccountID)
			}
			return nil
		}},
		{"User at its PDA", drift.UserAddress(u.Authority, u.SubAccountID), drift.Program(), func(b []byte) error {
			var a drift.User
			return a.UnmarshalBinary(b)
		}},
		{"UserStats", drift.UserStatsAddress(u.Authority), drift.Program(), func(b []byte) error {
			var s drift.UserStats
			if err := s.UnmarshalBinary(b); err != nil {
				return err
			}
			if s.Authority != u.Authority || s.NumberOfSubAccounts == 0 {
				return fmt.Errorf("authority %s, %d subaccounts", s.Authority, s.NumberOfSubAccounts)
			}
			return nil
		}},
		{"wallet token account", ata, solana.TokenProgramID, func(b []byte) error {
			mint, owner, amount, err := tokenAccountFields(b)
			if err == nil && (mint != usdc.Mint || owner != u.Authority || amount == 0) {
				err = fmt.Errorf("mint %s owner %s amount %d", mint, owner, amount)
			}
			return err
		}},
		{"spot vault", usdc.Vault, solana.TokenProgramID, func(b []byte) error {
			mint, owner, _, err := tokenAccountFields(b)
			if err == nil && (mint != usdc.Mint || owner != drift.SignerAddress()) {
				err = fmt.Errorf("mint %s owner %s", mint, owner)
			}
			return err
		}},
		{"mint", sol.Mint, solana.TokenProgramID, func(b []byte) error {
			if len(b) != 82 || b[44] != 9 || b[45] != 1 {
				return fmt.Errorf("%d bytes, decimals %d, initialized %d", len(b), b[44], b[45])
			}
			return nil
		}},
		{"lookup table", w.chain.LookupTables()[0], solana.AddressLookupTableProgramID, func(b []byte) error {
			_, err := solana.DecodeLookupTable(w.chain.LookupTables()[0], b)
			return err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, a := w.mustAccount(t, c.key)
			if a.Owner != c.owner.String() {
				t.Errorf("owner %s, want %s", a.Owner, c.owner)
			}
			if a.Lamports == 0 {
				t.Error("no lamports")
			}
			if err := c.decode(data); err != nil {
				t.Error(err)
			}
		})
	}
}

// perpKey is a user's position in one perp market.
type perpKey struct {
	user   string
	market uint16
}

// TestUserPositionsFollowTheFills: a User's perp base amounts are what its fills add up to, and
// its settlements set; its spot balances are what its deposits, withdrawals and spot fills add up
// to; its open orders are those placed and not yet filled, cancelled or expired.
func TestUserPositionsFollowTheFills(t *testing.T) {
	w := accountsWorld(t)
	base := map[perpKey]int64{}
	spot := map[perpKey]int64{}
	for _, m := range w.msgs {
		if !slices.Contains([]string{events.TopicFills, events.TopicDeposits, events.TopicSettlePnl}, m.Topic) {
			continue
		}
		r, err := events.Decode(m.Topic, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		switch r := r.(type) {
		case *events.Fill:
			b, q := amount(t, r.BaseAssetAmountFilled), amount(t, r.QuoteAssetAmountFilled)
			side := func(user, dir string, fee int64) {
				if user == "" {
					return
				}
				sign := int64(1)
				if dir == events.DirectionShort {
					sign = -1
				}
				if r.MarketType == events.MarketTypePerp {
					base[perpKey{user, uint16(r.MarketIndex)}] += sign * b
					return
				}
				spot[perpKey{user, uint16(r.MarketIndex)}] += sign * b
				spot[perpKey{user, 0}] -= sign*q + fee
			}
			side(r.Taker, r.TakerOrderDirection, amount(t, r.TakerFee))
			side(r.Maker, r.MakerOrderDirection, amount(t, r.MakerFee))
		case *events.Deposit:
			v := amount(t, r.Amount)
			if r.Direction == events.DepositDirectionWithdraw {
				v = -v
			}
			spot[perpKey{r.User, uint16(r.MarketIndex)}] += v
		case *events.SettlePnl:
			base[perpKey{r.User, uint16(r.MarketIndex)}] = amount(t, r.BaseAssetAmount)
			spot[perpKey{r.User, 0}] += amount(t, r.Pnl)
		}
	}
	if len(base) == 0 || len(spot) == 0 {
		t.Fatalf("%d perp and %d spot positions in the records", len(base), len(spot))
	}
	gotBase, gotSpot := map[perpKey]int64{}, map[perpKey]int64{}
	marketSets := map[string]bool{}
	for _, u := range w.chain.Users() {
		a, ok := w.chain.UserAccount(u.Address)
		if !ok {
			t.Fatalf("no account for %s", u.Address)
		}
		var set []uint16
		for _, p := range a.PerpPositions {
			if p.BaseAssetAmount != 0 || p.QuoteAssetAmount != 0 || p.OpenOrders != 0 {
				gotBase[perpKey{u.Address.String(), p.MarketIndex}] = p.BaseAssetAmount
				set = append(set, p.MarketIndex)
			}
		}
		for _, p := range a.SpotPositions {
			if p.ScaledBalance != 0 {
				v := int64(p.ScaledBalance)
				if p.BalanceType == drift.SpotBalanceTypeBorrow {
					v = -v
				}
				gotSpot[perpKey{u.Address.String(), p.MarketIndex}] = v
			}
		}
		open := 0
		for _, o := range a.Orders {
			if o.Status == drift.OrderStatusOpen {
				open++
			}
		}
		if int(a.OpenOrders) != open || a.HasOpenOrder != (open > 0) {
			t.Errorf("%s: openOrders %d hasOpenOrder %v with %d open orders", u.Address, a.OpenOrders, a.HasOpenOrder, open)
		}
		slices.Sort(set)
		marketSets[fmt.Sprint(set)] = true
	}
	for k, v := range base {
		if gotBase[k] != v {
			t.Errorf("%s perp %d: base %d, the records make %d", k.user, k.market, gotBase[k], v)
		}
	}
	for k, v := range spot {
		if gotSpot[k] != v {
			t.Errorf("%s spot %d: balance %d, the records make %d", k.user, k.market, gotSpot[k], v)
		}
	}
	// Users must differ in the markets a transaction names for them.
	if len(marketSets) < 3 {
		t.Errorf("users hold %d distinct sets of perp markets, want several: %v", len(marketSets), marketSets)
	}
}

func amount(tb testing.TB, a events.Amount) int64 {
	tb.Helper()
	if a == "" {
		return 0
	}
	v, ok := new(big.Int).SetString(string(a), 10)
	if !ok || !v.IsInt64() {
		tb.Fatalf("amount %q", a)
	}
	return v.Int64()
}

// TestUserServedAtBothAddresses: the records' address and the PDA hold the same bytes.
func TestUserServedAtBothAddresses(t *testing.T) {
	w := accountsWorld(t)
	for _, u := range w.chain.Users()[:10] {
		if u.PDA != drift.UserAddress(u.Authority, u.SubAccountID) {
			t.Fatalf("%s: PDA %s", u.Address, u.PDA)
		}
		a, _ := w.mustAccount(t, u.Address)
		b, _ := w.mustAccount(t, u.PDA)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the records' address and the PDA hold different accounts", u.Address)
		}
	}
}

// TestWalletTokenAccounts: each wallet has an associated token account for each spot mint but for a
// few, and the chain has none where Users says there is none.
func TestWalletTokenAccounts(t *testing.T) {
	w := accountsWorld(t)
	missing := 0
	for _, u := range w.chain.Users() {
		for _, m := range w.chain.Markets() {
			if m.Type != events.MarketTypeSpot {
				continue
			}
			ata := solana.AssociatedTokenAddress(u.Authority, m.Mint, solana.TokenProgramID)
			listed, ok := u.TokenAccounts[m.Mint]
			a := w.account(t, ata)
			switch {
			case ok && listed != ata:
				t.Errorf("%s %s: token account %s, want the ATA %s", u.Authority, m.Symbol, listed, ata)
			case ok && a == nil:
				t.Errorf("%s %s: listed token account %s not on the chain", u.Authority, m.Symbol, ata)
			case !ok && a != nil:
				t.Errorf("%s %s: unlisted token account %s on the chain", u.Authority, m.Symbol, ata)
			case !ok:
				missing++
			default:
				mint, owner, _, err := tokenAccountFields(mustB64(t, a.Data[0]))
				if err != nil || mint != m.Mint || owner != u.Authority {
					t.Errorf("%s %s: mint %s owner %s: %v", u.Authority, m.Symbol, mint, owner, err)
				}
			}
		}
	}
	if missing == 0 {
		t.Error("every wallet has every token account: the create-ATA path is never taken")
	}
}

// TestLookupTables: two tables at the mainnet addresses hold every market's accounts and what
// every transaction names.
func TestLookupTables(t *testing.T) {
	w := accountsWorld(t)
	keys := w.chain.LookupTables()
	want := []string{"Fpys8GRa5RBWfyeN7AaDUwFGD1zkDCA4z3t4CJLV8dfL", "EiWSskK5HXnBTptiS5DH6gpAJRVNQ3cAhTKBGaiaysAb"}
	if len(keys) != len(want) {
		t.Fatalf("%d tables", len(keys))
	}
	in := map[solana.PublicKey]int{}
	for i, k := range keys {
		if k.String() != want[i] {
			t.Errorf("table %d at %s, want %s", i, k, want[i])
		}
		data, _ := w.mustAccount(t, k)
		tbl, err := solana.DecodeLookupTable(k, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range tbl.Addresses {
			if _, dup := in[a]; dup {
				t.Errorf("%s in two tables", a)
			}
			in[a] = i
		}
	}
	need := map[string]solana.PublicKey{"state": drift.StateAddress(), "signer": drift.SignerAddress(), "token program": solana.TokenProgramID}
	for _, m := range w.chain.Markets() {
		need[m.Symbol+" market"] = m.Address
		need[m.Symbol+" oracle"] = m.Oracle
		if m.Type == events.MarketTypeSpot {
			need[m.Symbol+" vault"] = m.Vault
			need[m.Symbol+" mint"] = m.Mint
		}
	}
	for name, k := range need {
		if _, ok := in[k]; !ok {
			t.Errorf("%s (%s) in no table", name, k)
		}
	}
}

// TestRevenueShareAccountsOnlyWhereTheyExist: a wallet's RevenueShare and RevenueShareEscrow are
// served when its new-user record has them, and getAccountInfo answers null for the others.
func TestRevenueShareAccountsOnlyWhereTheyExist(t *testing.T) {
	w := accountsWorld(t)
	type has struct{ share, escrow bool }
	wallets := map[string]has{}
	for _, m := range w.msgs {
		if m.Topic != events.TopicNewUsers {
			continue
		}
		r, err := events.Decode(m.Topic, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		nu := r.(*events.NewUser)
		h := wallets[nu.UserAuthority]
		h.share = h.share || nu.BuilderRevenueShareAccount != nil
		h.escrow = h.escrow || nu.RevenueShareEscrow != nil
		wallets[nu.UserAuthority] = h
	}
	count := has{}
	for auth, h := range wallets {
		k := solana.MustPublicKey(auth)
		cases := []struct {
			name string
			addr solana.PublicKey
			want bool
		}{
			{"RevenueShare", records.RevenueShareAddress(k), h.share},
			{"RevenueShareEscrow", records.RevenueShareEscrowAddress(k), h.escrow},
		}
		for _, c := range cases {
			a := w.account(t, c.addr)
			if (a != nil) != c.want {
				t.Errorf("%s of %s: served %v, want %v", c.name, auth, a != nil, c.want)
			}
		}
		count.share = count.share || !h.share
		count.escrow = count.escrow || !h.escrow
	}
	if !count.share || !count.escrow {
		t.Error("every wallet has builder accounts: the null answer is not tested")
	}
}
