package records_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// TestMarketAccountsGiveTheirStatesBack maps the real market dumps to states, the states to
// synthetic accounts and those back to states: the same records, and a catalogue with the same
// symbols.
func TestMarketAccountsGiveTheirStatesBack(t *testing.T) {
	perps, spots := mustSampleMarkets(t)
	cat, err := records.NewCatalogue(perps, spots)
	if err != nil {
		t.Fatal(err)
	}
	m := records.New(cat)
	var states []*events.MarketState
	for i := range perps {
		s, err := m.PerpMarketState(&perps[i], stateTs, stateSlot)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, s)
	}
	for i := range spots {
		s, err := m.SpotMarketState(&spots[i], stateTs, stateSlot)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, s)
	}
	var gotPerps []drift.PerpMarket
	var gotSpots []drift.SpotMarket
	for _, want := range states {
		var got *events.MarketState
		switch want.MarketType {
		case events.MarketTypePerp:
			a, err := records.PerpMarketAccount(want)
			if err != nil {
				t.Fatalf("%s: %v", want.Symbol, err)
			}
			mustReencode(t, a, new(drift.PerpMarket))
			gotPerps = append(gotPerps, *a)
			got, err = m.PerpMarketState(a, want.Ts, want.Slot)
			if err != nil {
				t.Fatal(err)
			}
		default:
			a, err := records.SpotMarketAccount(want)
			if err != nil {
				t.Fatalf("%s: %v", want.Symbol, err)
			}
			mustReencode(t, a, new(drift.SpotMarket))
			gotSpots = append(gotSpots, *a)
			got, err = m.SpotMarketState(a, want.Ts, want.Slot)
			if err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s\ngot  %+v\nwant %+v", want.Symbol, got, want)
		}
	}
	back, err := records.NewCatalogue(gotPerps, gotSpots)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Markets(), cat.Markets()) {
		t.Errorf("catalogue from the synthetic accounts %v, want %v", back.Markets(), cat.Markets())
	}
}

// mustReencode checks that a's bytes decode into fresh to a again: the account is one the program
// could hold, size included.
func mustReencode[A interface {
	MarshalBinary() ([]byte, error)
	UnmarshalBinary([]byte) error
}](tb testing.TB, a, fresh A) {
	tb.Helper()
	b, err := a.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	if err := fresh.UnmarshalBinary(b); err != nil {
		tb.Fatal(err)
	}
	if !reflect.DeepEqual(a, fresh) {
		tb.Fatalf("%T changed through its bytes", a)
	}
}

func TestMarketAccountsRefuseWhatNoAccountHolds(t *testing.T) {
	decimals := 6
	perp := func(f func(*events.MarketState)) *events.MarketState {
		r := &events.MarketState{
			MarketType: events.MarketTypePerp, Symbol: "SOL-PERP", OraclePrice: "150000000", MarkPrice: "150010000",
			BidPrice: "149990000", AskPrice: "150030000", LongSpread: "250", ShortSpread: "300",
			BaseAssetAmountWithAmm: "-5", BaseAssetAmountLong: "10", BaseAssetAmountShort: "-5", OpenInterest: "15",
			FundingRateLong: "1", FundingRateShort: "1",
		}
		f(r)
		return r
	}
	spot := func(f func(*events.MarketState)) *events.MarketState {
		r := &events.MarketState{
			MarketType: events.MarketTypeSpot, Symbol: "USDC", OraclePrice: "1000000", Decimals: &decimals,
			DepositBalance: "1000", BorrowBalance: "400", DepositRate: "1000", BorrowRate: "90000",
		}
		f(r)
		return r
	}
	for _, tc := range []struct {
		name string
		r    *events.MarketState
	}{
		{"open interest not the sides", perp(func(r *events.MarketState) { r.OpenInterest = "16" })},
		{"borrows above deposits", spot(func(r *events.MarketState) { r.BorrowBalance = "1001" })},
		{"deposit rate above the borrow rate's", spot(func(r *events.MarketState) { r.DepositRate = "90000" })},
		{"a rate with no utilization", spot(func(r *events.MarketState) { r.BorrowBalance = "0" })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.r.MarketType == events.MarketTypePerp {
				_, err = records.PerpMarketAccount(tc.r)
			} else {
				_, err = records.SpotMarketAccount(tc.r)
			}
			if !errors.Is(err, records.ErrNotRepresentable) {
				t.Fatalf("err %v, want ErrNotRepresentable", err)
			}
		})
	}
	for _, ok := range []*events.MarketState{perp(func(*events.MarketState) {}), spot(func(*events.MarketState) {})} {
		if _, err := records.PerpMarketAccount(ok); ok.MarketType == events.MarketTypePerp && err != nil {
			t.Errorf("%s: %v", ok.Symbol, err)
		}
		if _, err := records.SpotMarketAccount(ok); ok.MarketType == events.MarketTypeSpot && err != nil {
			t.Errorf("%s: %v", ok.Symbol, err)
		}
	}
}

// TestNewUserAccountsGiveTheFieldsBack builds the accounts of new user records and maps them back
// into the records' delegate and builder accounts, as the indexer does with what it fetches.
func TestNewUserAccountsGiveTheFieldsBack(t *testing.T) {
	wallet := solana.MustPublicKey("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM")
	builder := solana.MustPublicKey("4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T")
	base := events.NewUser{
		Tx: events.Tx{Ts: stateTs, TxSig: "sig", Slot: stateSlot}, UserAuthority: wallet.String(),
		User: "Fe4hMZrg7R97ZrbSScWBXUpQwZB9gzBnhodTCGyjkHsG", Name: "Main Account",
	}
	for _, tc := range []struct {
		name string
		edit func(*events.NewUser)
	}{
		{"plain", func(*events.NewUser) {}},
		{"delegate", func(r *events.NewUser) { r.Delegate = builder.String() }},
		{"second subaccount", func(r *events.NewUser) { r.SubAccountID, r.Name = 1, "Subaccount 1" }},
		{"builder", func(r *events.NewUser) {
			r.BuilderRevenueShareAccount = &events.BuilderAccount{
				AccountID: records.RevenueShareAddress(wallet).String(), TotalBuilderRewards: "123456789",
			}
		}},
		{"escrow", func(r *events.NewUser) {
			r.RevenueShareEscrow = &events.RevenueShareEscrow{
				AccountID:        records.RevenueShareEscrowAddress(wallet).String(),
				ApprovedBuilders: []events.ApprovedBuilder{{Authority: builder.String(), MaxFeeTenthBps: 250}},
			}
		}},
		{"escrow approving nobody", func(r *events.NewUser) {
			r.RevenueShareEscrow = &events.RevenueShareEscrow{
				AccountID: records.RevenueShareEscrowAddress(wallet).String(), ApprovedBuilders: []events.ApprovedBuilder{},
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := base
			tc.edit(&want)
			var accts records.NewUserAccounts
			u, err := records.UserAccount(&want)
			if err != nil {
				t.Fatal(err)
			}
			mustReencode(t, u, new(drift.User))
			accts.User = u
			if b := want.BuilderRevenueShareAccount; b != nil {
				if accts.RevenueShare, err = records.RevenueShareAccount(want.UserAuthority, b); err != nil {
					t.Fatal(err)
				}
				mustReencode(t, accts.RevenueShare, new(records.RevenueShare))
			}
			if x := want.RevenueShareEscrow; x != nil {
				if accts.RevenueShareEscrow, err = records.RevenueShareEscrowAccount(want.UserAuthority, x); err != nil {
					t.Fatal(err)
				}
				mustReencode(t, accts.RevenueShareEscrow, new(records.RevenueShareEscrow))
			}
			userAddr, shareAddr, escrowAddr, err := records.NewUserAccountAddresses(&want)
			if err != nil {
				t.Fatal(err)
			}
			if userAddr.String() != want.User || shareAddr != records.RevenueShareAddress(wallet) ||
				escrowAddr != records.RevenueShareEscrowAddress(wallet) {
				t.Fatalf("addresses %s %s %s", userAddr, shareAddr, escrowAddr)
			}
			got := base
			got.SubAccountID, got.Name = want.SubAccountID, want.Name
			if err := accts.Apply(&got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
	t.Run("an account off its PDA is refused", func(t *testing.T) {
		_, err := records.RevenueShareAccount(wallet.String(), &events.BuilderAccount{AccountID: builder.String(), TotalBuilderRewards: "1"})
		if !errors.Is(err, records.ErrNotRepresentable) {
			t.Fatalf("err %v", err)
		}
	})
}
