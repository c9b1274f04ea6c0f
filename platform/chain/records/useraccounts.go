package records

import (
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// A NewUserRecord names the account and its wallet but not what a new-user record also tells: the
// subaccount's delegate (in the User account) and the wallet's builder accounts (RevenueShare and
// RevenueShareEscrow, PDAs of the wallet). The indexer fetches those accounts when it maps the
// event (NewUserAccountAddresses, then NewUserAccounts.Apply); a chain that serves a record stream
// builds them from the records (UserAccount, RevenueShareAccount, RevenueShareEscrowAccount).
//
// RevenueShare and RevenueShareEscrow are not among the accounts the drift package generates, so
// they are laid out here by hand, field by field as the IDL (idl.json) gives them: borsh, the
// escrow's orders and approved builders as Vecs.

// RevenueShareAddress is the address of authority's RevenueShare account, the PDA of
// ["REV_SHARE", authority] (protocol-v2 sdk/src/addresses/pda.ts).
func RevenueShareAddress(authority solana.PublicKey) solana.PublicKey {
	return pda([]byte("REV_SHARE"), authority[:])
}

// RevenueShareEscrowAddress is the address of authority's RevenueShareEscrow account, the PDA of
// ["REV_ESCROW", authority].
func RevenueShareEscrowAddress(authority solana.PublicKey) solana.PublicKey {
	return pda([]byte("REV_ESCROW"), authority[:])
}

// pda panics for the same reason drift's PDAs do: with these short seeds no failure is possible
// but a bug.
func pda(seeds ...[]byte) solana.PublicKey {
	k, _, err := solana.FindProgramAddress(seeds, drift.Program())
	if err != nil {
		panic(fmt.Sprintf("records: PDA of %q: %v", seeds, err))
	}
	return k
}

// RevenueShare is a builder's or referrer's RevenueShare account.
type RevenueShare struct {
	Authority            solana.PublicKey
	TotalReferrerRewards uint64
	TotalBuilderRewards  uint64 // quote 1e6
	Padding              [18]byte
}

// RevenueShareEscrow is a wallet's escrow of builder and referral fees, with the builders it
// approved.
type RevenueShareEscrow struct {
	Authority                 solana.PublicKey
	Referrer                  solana.PublicKey
	ReferrerBoostExpireTS     uint32
	ReferrerRewardOffset      int8
	RefereeFeeNumeratorOffset int8
	ReferrerBoostNumerator    int8
	ReservedFixed             [17]byte
	Padding0                  uint32
	Orders                    []RevenueShareOrder
	Padding1                  uint32
	ApprovedBuilders          []BuilderInfo
}

// RevenueShareOrder is one order slot of an escrow.
type RevenueShareOrder struct {
	FeesAccrued    uint64
	OrderID        uint32
	FeeTenthBps    uint16
	MarketIndex    uint16
	SubAccountID   uint16
	BuilderIdx     uint8
	BitFlags       uint8
	UserOrderIndex uint8
	MarketType     drift.MarketType
	Padding        [10]byte
}

// BuilderInfo is a builder an escrow approved, with the most it may charge.
type BuilderInfo struct {
	Authority      solana.PublicKey
	MaxFeeTenthBps uint16
	Padding        [6]byte
}

// Sizes of the fixed layouts, discriminator included for the accounts.
const (
	revenueShareSize      = anchor.DiscriminatorSize + 32 + 8 + 8 + 18
	revenueShareOrderSize = 8 + 4 + 2 + 2 + 2 + 1 + 1 + 1 + 1 + 10
	builderInfoSize       = 32 + 2 + 6
)

// MarshalBinary is the account's data, discriminator first.
func (a *RevenueShare) MarshalBinary() ([]byte, error) {
	d := anchor.AccountDiscriminator("RevenueShare")
	b := make([]byte, 0, revenueShareSize)
	b = append(b, d[:]...)
	b = append(b, a.Authority[:]...)
	b = borsh.AppendU64(b, a.TotalReferrerRewards)
	b = borsh.AppendU64(b, a.TotalBuilderRewards)
	return append(b, a.Padding[:]...), nil
}

// UnmarshalBinary decodes the account's data; it must be exactly the account's size.
func (a *RevenueShare) UnmarshalBinary(data []byte) error {
	var d borsh.Decoder
	if err := beginAccount(&d, data, "RevenueShare"); err != nil {
		return err
	}
	d.Fill(a.Authority[:])
	a.TotalReferrerRewards = d.U64()
	a.TotalBuilderRewards = d.U64()
	d.Fill(a.Padding[:])
	return endAccount(&d, "RevenueShare")
}

// MarshalBinary is the account's data, discriminator first.
func (a *RevenueShareEscrow) MarshalBinary() ([]byte, error) {
	d := anchor.AccountDiscriminator("RevenueShareEscrow")
	b := append([]byte(nil), d[:]...)
	b = append(b, a.Authority[:]...)
	b = append(b, a.Referrer[:]...)
	b = borsh.AppendU32(b, a.ReferrerBoostExpireTS)
	b = borsh.AppendI8(b, a.ReferrerRewardOffset)
	b = borsh.AppendI8(b, a.RefereeFeeNumeratorOffset)
	b = borsh.AppendI8(b, a.ReferrerBoostNumerator)
	b = append(b, a.ReservedFixed[:]...)
	b = borsh.AppendU32(b, a.Padding0)
	b = borsh.AppendLength(b, len(a.Orders))
	for _, o := range a.Orders {
		b = borsh.AppendU64(b, o.FeesAccrued)
		b = borsh.AppendU32(b, o.OrderID)
		b = borsh.AppendU16(b, o.FeeTenthBps)
		b = borsh.AppendU16(b, o.MarketIndex)
		b = borsh.AppendU16(b, o.SubAccountID)
		b = append(b, o.BuilderIdx, o.BitFlags, o.UserOrderIndex, uint8(o.MarketType))
		b = append(b, o.Padding[:]...)
	}
	b = borsh.AppendU32(b, a.Padding1)
	b = borsh.AppendLength(b, len(a.ApprovedBuilders))
	for _, bi := range a.ApprovedBuilders {
		b = append(b, bi.Authority[:]...)
		b = borsh.AppendU16(b, bi.MaxFeeTenthBps)
		b = append(b, bi.Padding[:]...)
	}
	return b, nil
}

// UnmarshalBinary decodes the account's data; bytes after the approved builders are an error.
func (a *RevenueShareEscrow) UnmarshalBinary(data []byte) error {
	var d borsh.Decoder
	if err := beginAccount(&d, data, "RevenueShareEscrow"); err != nil {
		return err
	}
	d.Fill(a.Authority[:])
	d.Fill(a.Referrer[:])
	a.ReferrerBoostExpireTS = d.U32()
	a.ReferrerRewardOffset = d.I8()
	a.RefereeFeeNumeratorOffset = d.I8()
	a.ReferrerBoostNumerator = d.I8()
	d.Fill(a.ReservedFixed[:])
	a.Padding0 = d.U32()
	a.Orders = make([]RevenueShareOrder, d.Length(revenueShareOrderSize))
	for i := range a.Orders {
		o := &a.Orders[i]
		o.FeesAccrued = d.U64()
		o.OrderID = d.U32()
		o.FeeTenthBps = d.U16()
		o.MarketIndex = d.U16()
		o.SubAccountID = d.U16()
		o.BuilderIdx = d.U8()
		o.BitFlags = d.U8()
		o.UserOrderIndex = d.U8()
		o.MarketType = drift.MarketType(d.U8())
		d.Fill(o.Padding[:])
	}
	a.Padding1 = d.U32()
	a.ApprovedBuilders = make([]BuilderInfo, d.Length(builderInfoSize))
	for i := range a.ApprovedBuilders {
		bi := &a.ApprovedBuilders[i]
		d.Fill(bi.Authority[:])
		bi.MaxFeeTenthBps = d.U16()
		d.Fill(bi.Padding[:])
	}
	return endAccount(&d, "RevenueShareEscrow")
}

var errAccountDiscriminator = errors.New("wrong account discriminator")

func beginAccount(d *borsh.Decoder, data []byte, name string) error {
	disc := anchor.AccountDiscriminator(name)
	if len(data) < len(disc) || [anchor.DiscriminatorSize]byte(data[:len(disc)]) != disc {
		return fmt.Errorf("records: decode %s: %w", name, errAccountDiscriminator)
	}
	d.Reset(data, len(disc))
	return nil
}

func endAccount(d *borsh.Decoder, name string) error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("records: decode %s at offset %d: %w", name, d.ErrOffset(), err)
	}
	if d.Len() > 0 {
		return fmt.Errorf("records: decode %s: %w: %d", name, borsh.ErrTrailing, d.Len())
	}
	return nil
}

// UserAccount is the User account of a new user record: its authority, subaccount id, name
// (padded with spaces) and delegate (zero for none, the program's "no delegate"); the rest of the
// account (positions, orders, totals) is zero, as for a subaccount just made.
func UserAccount(r *events.NewUser) (*drift.User, error) {
	e := &enc{}
	u := &drift.User{
		Authority:    e.key("userAuthority", r.UserAuthority),
		Delegate:     e.keyOrZero("delegate", r.Delegate),
		Name:         e.name("name", r.Name),
		SubAccountID: small[uint16](e, "subAccountId", r.SubAccountID),
	}
	if e.err != nil {
		return nil, wrap("User", e.err)
	}
	return u, nil
}

// RevenueShareAccount is the RevenueShare account of authority's builder account b. b's accountId
// must be the account's PDA: an account elsewhere is one the indexer would not find.
func RevenueShareAccount(authority string, b *events.BuilderAccount) (*RevenueShare, error) {
	e := &enc{}
	a := &RevenueShare{
		Authority:           e.key("userAuthority", authority),
		TotalBuilderRewards: uintOf[uint64](e, "totalBuilderRewards", string(b.TotalBuilderRewards)),
	}
	if e.err == nil {
		if want := RevenueShareAddress(a.Authority).String(); b.AccountID != want {
			e.fail("accountId", fmt.Errorf("%w: %s is not the PDA %s", ErrNotRepresentable, b.AccountID, want))
		}
	}
	if e.err != nil {
		return nil, wrap("RevenueShare", e.err)
	}
	return a, nil
}

// RevenueShareEscrowAccount is the RevenueShareEscrow account of authority's escrow x: its
// approved builders, no order slots; x's accountId must be the account's PDA.
func RevenueShareEscrowAccount(authority string, x *events.RevenueShareEscrow) (*RevenueShareEscrow, error) {
	e := &enc{}
	a := &RevenueShareEscrow{Authority: e.key("userAuthority", authority), Orders: []RevenueShareOrder{}}
	a.ApprovedBuilders = make([]BuilderInfo, len(x.ApprovedBuilders))
	for i, b := range x.ApprovedBuilders {
		a.ApprovedBuilders[i] = BuilderInfo{
			Authority:      e.key("approvedBuilders.authority", b.Authority),
			MaxFeeTenthBps: small[uint16](e, "approvedBuilders.maxFeeTenthBps", b.MaxFeeTenthBps),
		}
	}
	if e.err == nil {
		if want := RevenueShareEscrowAddress(a.Authority).String(); x.AccountID != want {
			e.fail("accountId", fmt.Errorf("%w: %s is not the PDA %s", ErrNotRepresentable, x.AccountID, want))
		}
	}
	if e.err != nil {
		return nil, wrap("RevenueShareEscrow", e.err)
	}
	return a, nil
}

// NewUserAccountAddresses are the accounts to fetch for a new user record r (as NewUser maps it
// from the event): its User account, and its wallet's RevenueShare and RevenueShareEscrow PDAs.
func NewUserAccountAddresses(r *events.NewUser) (user, revenueShare, escrow solana.PublicKey, err error) {
	if user, err = solana.ParsePublicKey(r.User); err != nil {
		return user, revenueShare, escrow, fmt.Errorf("records: new user %q: %w", r.User, err)
	}
	authority, err := solana.ParsePublicKey(r.UserAuthority)
	if err != nil {
		return user, revenueShare, escrow, fmt.Errorf("records: new user authority %q: %w", r.UserAuthority, err)
	}
	return user, RevenueShareAddress(authority), RevenueShareEscrowAddress(authority), nil
}

// NewUserAccounts are the accounts of NewUserAccountAddresses as fetched, nil for an account that
// does not exist (getMultipleAccounts' null): a wallet without builder accounts has neither.
type NewUserAccounts struct {
	User               *drift.User
	RevenueShare       *RevenueShare
	RevenueShareEscrow *RevenueShareEscrow
}

// Apply sets the fields of r that only these accounts tell: Delegate from the User account ("" for
// the zero key or no account), BuilderRevenueShareAccount from the RevenueShare account (its
// total builder rewards) and RevenueShareEscrow from the escrow (its approved builders); the
// account ids are the PDAs. Only the wallet's first subaccount (subAccountId 0) carries the builder
// accounts, as the records do: the wallet's other subaccounts would repeat them.
func (a NewUserAccounts) Apply(r *events.NewUser) error {
	authority, err := solana.ParsePublicKey(r.UserAuthority)
	if err != nil {
		return fmt.Errorf("records: new user authority %q: %w", r.UserAuthority, err)
	}
	r.Delegate = ""
	if a.User != nil {
		r.Delegate = keyOrNone(a.User.Delegate)
	}
	r.BuilderRevenueShareAccount, r.RevenueShareEscrow = nil, nil
	if r.SubAccountID != 0 {
		return nil
	}
	if s := a.RevenueShare; s != nil {
		r.BuilderRevenueShareAccount = &events.BuilderAccount{
			AccountID:           RevenueShareAddress(authority).String(),
			TotalBuilderRewards: uamt(s.TotalBuilderRewards),
		}
	}
	if x := a.RevenueShareEscrow; x != nil {
		e := &events.RevenueShareEscrow{
			AccountID:        RevenueShareEscrowAddress(authority).String(),
			ApprovedBuilders: make([]events.ApprovedBuilder, len(x.ApprovedBuilders)),
		}
		for i, b := range x.ApprovedBuilders {
			e.ApprovedBuilders[i] = events.ApprovedBuilder{Authority: b.Authority.String(), MaxFeeTenthBps: int(b.MaxFeeTenthBps)}
		}
		r.RevenueShareEscrow = e
	}
	return nil
}
