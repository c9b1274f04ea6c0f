package txbuild_test

import (
	"errors"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/txbuild"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// k is a readable fixed key for these tests.
func k(b byte) solana.PublicKey { return solana.PublicKey{b} }

// fixture: spot 0 (quote, no oracle), spot 1 (oracle 0x11), spot 2 (Token-2022, oracle 0x12);
// perp 0 (oracle 0x11, shared with spot 1), perp 5 (prelaunch oracle 0x25).
func fixture() txbuild.State {
	st := txbuild.State{Perp: map[uint16]*drift.PerpMarket{}, Spot: map[uint16]*drift.SpotMarket{}}
	st.Spot[0] = &drift.SpotMarket{Pubkey: k(0xa0), Vault: k(0xb0), Mint: k(0xc0)}
	st.Spot[1] = &drift.SpotMarket{Pubkey: k(0xa1), Vault: k(0xb1), Mint: k(0xc1), Oracle: k(0x11), MarketIndex: 1}
	st.Spot[2] = &drift.SpotMarket{Pubkey: k(0xa2), Vault: k(0xb2), Mint: k(0xc2), Oracle: k(0x12), MarketIndex: 2, TokenProgramFlag: 1}
	st.Perp[0] = &drift.PerpMarket{Pubkey: k(0xd0)}
	st.Perp[0].Amm.Oracle = k(0x11)
	st.Perp[5] = &drift.PerpMarket{Pubkey: k(0xd5), MarketIndex: 5}
	st.Perp[5].Amm.Oracle = k(0x25)
	st.Perp[5].Amm.OracleSource = drift.OracleSourcePrelaunch
	return st
}

func ro(b byte) solana.AccountMeta { return solana.AccountMeta{PublicKey: k(b)} }
func rw(b byte) solana.AccountMeta { return solana.AccountMeta{PublicKey: k(b), IsWritable: true} }

// remainingOf is the accounts of ix after its first n, its own.
func remainingOf(ix solana.Instruction, n int) []solana.AccountMeta { return ix.Accounts[n:] }

func TestRemainingAccounts(t *testing.T) {
	st := fixture()
	withSpot1 := &drift.User{Authority: k(1)}
	withSpot1.SpotPositions[3] = drift.SpotPosition{MarketIndex: 1, ScaledBalance: 5}
	withPerp5 := &drift.User{Authority: k(1)}
	withPerp5.PerpPositions[0] = drift.PerpPosition{MarketIndex: 5, OpenOrders: 1}
	liquidated := &drift.User{Authority: k(1)}
	liquidated.PerpPositions[2] = drift.PerpPosition{MarketIndex: 0, PositionFlag: 2}
	spotOrders := &drift.User{Authority: k(1)}
	spotOrders.SpotPositions[1] = drift.SpotPosition{MarketIndex: 2, OpenOrders: 1, OpenBids: 10}
	empty := &drift.User{Authority: k(1)}
	empty.PerpPositions[0] = drift.PerpPosition{MarketIndex: 0, PositionFlag: 1} // isolated flag alone holds nothing

	cases := []struct {
		name  string
		build func() ([]solana.Instruction, error)
		own   int
		want  []solana.AccountMeta
	}{
		{
			// The deposit market is named writable after the user's read-only one: the flag
			// changes, the place does not; Token-2022 appends the mint.
			"deposit into a held market",
			func() ([]solana.Instruction, error) {
				return txbuild.Deposit(st, txbuild.Account{Address: k(2), User: withSpot1}, 1, 10)
			},
			7, []solana.AccountMeta{ro(0x11), rw(0xa1)},
		},
		{
			"deposit Token-2022",
			func() ([]solana.Instruction, error) {
				return txbuild.Deposit(st, txbuild.Account{Address: k(2), User: withSpot1}, 2, 10)
			},
			7, []solana.AccountMeta{ro(0x11), ro(0x12), ro(0xa1), rw(0xa2), ro(0xc2)},
		},
		{
			"withdraw adds the quote market read-only before the writable one",
			func() ([]solana.Instruction, error) {
				return txbuild.Withdraw(st, txbuild.Account{Address: k(2), User: empty}, 1, 10)
			},
			8, []solana.AccountMeta{ro(0x11), ro(0xa0), rw(0xa1)},
		},
		{
			"an order in a perp market shares its oracle with a spot market",
			func() ([]solana.Instruction, error) {
				return txbuild.PlaceOrder(st, txbuild.Account{Address: k(2), User: withSpot1}, txbuild.Order{MarketIndex: 0, Type: drift.OrderTypeMarket})
			},
			3, []solana.AccountMeta{ro(0x11), ro(0xa1), ro(0xa0), ro(0xd0)},
		},
		{
			"high-leverage mode names its config last",
			func() ([]solana.Instruction, error) {
				return txbuild.PlaceOrder(st, txbuild.Account{Address: k(2), User: empty}, txbuild.Order{MarketIndex: 0, Type: drift.OrderTypeLimit, HighLeverageMode: true})
			},
			3, []solana.AccountMeta{ro(0x11), ro(0xa0), ro(0xd0), {PublicKey: drift.HighLeverageModeConfigAddress(), IsWritable: true}},
		},
		{
			"settle writes a prelaunch oracle",
			func() ([]solana.Instruction, error) {
				return txbuild.SettlePnl(st, txbuild.Account{Address: k(2), User: withPerp5}, []uint16{5, 0})
			},
			4, []solana.AccountMeta{rw(0x25), ro(0x11), rw(0xa0), rw(0xd5), rw(0xd0)},
		},
		{
			"a position being liquidated counts, open spot orders add the quote",
			func() ([]solana.Instruction, error) {
				u := *liquidated
				u.SpotPositions = spotOrders.SpotPositions
				return txbuild.CancelOrders(st, txbuild.Account{Address: k(2), User: &u}, nil)
			},
			3, []solana.AccountMeta{ro(0x12), ro(0x11), ro(0xa2), ro(0xa0), ro(0xd0)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ixs, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			got := remainingOf(ixs[len(ixs)-1], c.own)
			if len(got) != len(c.want) {
				t.Fatalf("remaining accounts %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("remaining account %d: %+v, want %+v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	st := fixture()
	held := &drift.User{Authority: k(1)}
	held.PerpPositions[0] = drift.PerpPosition{MarketIndex: 9, BaseAssetAmount: 1}
	acct := txbuild.Account{Address: k(2), User: &drift.User{Authority: k(1)}}
	hook := fixture()
	hook.Spot[1].TokenProgramFlag = 2

	unknown := func(kind txbuild.MarketKind, index uint16) func(error) bool {
		return func(err error) bool {
			var e *txbuild.UnknownMarketError
			return errors.As(err, &e) && e.Kind == kind && e.Index == index
		}
	}
	cases := []struct {
		name string
		err  error
		ok   func(error) bool
	}{
		{"deposit, unknown spot market", second(txbuild.Deposit(st, acct, 7, 1)), unknown(txbuild.Spot, 7)},
		{"order, unknown perp market", second(txbuild.PlaceOrder(st, acct, txbuild.Order{MarketIndex: 3, Type: drift.OrderTypeMarket})), unknown(txbuild.Perp, 3)},
		{"cancel, the user holds an unknown market", second(txbuild.CancelOrders(st, txbuild.Account{Address: k(2), User: held}, nil)), unknown(txbuild.Perp, 9)},
		{"settle, unknown market", second(txbuild.SettlePnl(st, acct, []uint16{0, 4})), unknown(txbuild.Perp, 4)},
		{"transfer hook", second(txbuild.Withdraw(hook, acct, 1, 1)), func(err error) bool { return errors.Is(err, txbuild.ErrTransferHook) }},
		{"trigger order", second(txbuild.PlaceOrder(st, acct, txbuild.Order{Type: drift.OrderTypeTriggerMarket})), func(err error) bool { return err != nil }},
		{"auction on a limit order", second(txbuild.PlaceOrder(st, acct, txbuild.Order{Type: drift.OrderTypeLimit, Auction: &txbuild.Auction{}})), func(err error) bool { return err != nil }},
		{"leverage 0.1", second(txbuild.PlaceOrder(st, acct, txbuild.Order{Type: drift.OrderTypeMarket, MaxLeverage: 0.1})), func(err error) bool { return err != nil }},
		{"no user", second(txbuild.Deposit(st, txbuild.Account{}, 0, 1)), func(err error) bool { return err != nil }},
		{"settle nothing", second(txbuild.SettlePnl(st, acct, nil)), func(err error) bool { return err != nil }},
	}
	for _, c := range cases {
		if !c.ok(c.err) {
			t.Errorf("%s: error %v", c.name, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestMarginRatio(t *testing.T) {
	cases := []struct {
		leverage float64
		want     uint16
		wantErr  bool
	}{
		{1, 10000, false},
		{3, 3333, false},
		{7, 1429, false}, // rounded, where the SDK's own pre-order helper floors to 1428
		{20, 500, false},
		{101, 99, false},
		{0.15, 0, true},
		{0, 0, true},
		{-2, 0, true},
		{1e9, 0, true},
	}
	for _, c := range cases {
		got, err := txbuild.MarginRatio(c.leverage)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("MarginRatio(%v) = %d, %v; want %d, error %v", c.leverage, got, err, c.want, c.wantErr)
		}
	}
}

func TestBuilderApprove(t *testing.T) {
	cases := []struct {
		name         string
		escrowExists bool
		fee          uint16
		wantIxs      int
		wantAdd      byte
	}{
		{"escrow exists", true, 50, 1, 1},
		{"escrow created in the same transaction", false, 50, 2, 1},
		{"a fee of 0 revokes", true, 0, 1, 0},
	}
	for _, c := range cases {
		ixs := txbuild.BuilderApprove(k(1), k(2), c.fee, c.escrowExists, 16)
		if len(ixs) != c.wantIxs {
			t.Fatalf("%s: %d instructions, want %d", c.name, len(ixs), c.wantIxs)
		}
		last := ixs[len(ixs)-1].Data
		if got := last[len(last)-1]; got != c.wantAdd {
			t.Errorf("%s: add = %d, want %d", c.name, got, c.wantAdd)
		}
	}
}
