// Package authority is the Authority tag: a wallet's views across its subaccounts (insurance fund
// stakes, LP mint/redeem records, snapshots, its account list) and its CSV exports. This package holds
// the domain: the wallet's records, what the store answers, the export request and how a job's state
// reads in the API. postgres/ stores, http/ serves, service/ declares it to the kit.
package authority

import (
	"context"
	"encoding/json"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/snapshots"
)

// CheckAuthority refuses an authorityId that is no wallet key.
func CheckAuthority(id string) error {
	if !events.ValidPublicKey(id) {
		return fault.Errorf(fault.Invalid, "authorityId must be a wallet's public key (base58, 32 bytes)")
	}
	return nil
}

// Snapshot kinds, as protocol.account-snapshots names them.
const (
	SnapshotTrading  = events.SnapshotTrading
	SnapshotEarn     = events.SnapshotEarn
	SnapshotVault    = events.SnapshotVault
	SnapshotReferral = events.SnapshotReferral
)

// Account is one subaccount of a wallet, as protocol.new-users told it.
type Account struct {
	AccountID    string `json:"accountId"`
	SubAccountID int    `json:"subAccountId"`
	Name         string `json:"name"`
}

// AccountList is a wallet's accounts and builder accounts, the API's account list object; the
// builder accounts are nil when the wallet has none.
type AccountList struct {
	Accounts                   []Account                  `json:"accounts"`
	BuilderRevenueShareAccount *events.BuilderAccount     `json:"builderRevenueShareAccount"`
	RevenueShareEscrow         *events.RevenueShareEscrow `json:"revenueShareEscrow"`
}

// Series is one account's snapshot series of one kind: Points entries, oldest first, nil where the
// account has no snapshot in the bucket. Each entry is the API's JSON of the snapshot.
type Series struct {
	AccountID string
	Snapshots []json.RawMessage
}

// Snapshots are a wallet's series of several kinds over the same points.
type Snapshots struct {
	// Accounts are the wallet's accounts that have series, in the order the API lists them: by
	// subaccount id, then those known only from their snapshots.
	Accounts []string
	// ByKind holds, for each kind asked, the series of every account, in Accounts order.
	ByKind map[string][]Series
	// Latest holds the newest trading snapshot of each account before the series' end (the
	// account's metrics), when trading was asked; an account without one is absent.
	Latest map[string]json.RawMessage
}

// Store reads what the Authority tag serves beside its series. Every method takes a wallet key that
// CheckAuthority accepted, and returns fault errors for what the client did wrong.
type Store interface {
	// Accounts returns the wallet's account list; an unknown wallet has no accounts and no builder
	// accounts.
	Accounts(ctx context.Context, authority string) (AccountList, error)
	// Foreign returns the keys of keys that are not accounts of the wallet (by protocol.new-users),
	// in their order.
	Foreign(ctx context.Context, authority string, keys []string) ([]string, error)
	// Snapshots returns the wallet's series of kinds (not the referral kind) over p, for every
	// account of the wallet.
	Snapshots(ctx context.Context, authority string, kinds []string, p snapshots.Points) (Snapshots, error)
	// Referrals returns the wallet's referral series over p.
	Referrals(ctx context.Context, authority string, p snapshots.Points) ([]json.RawMessage, error)
	// Exclusive runs f while no other call of Exclusive for the wallet runs, in this process or any
	// other on the same database: what f reads is not changed by another replica's f meanwhile.
	Exclusive(ctx context.Context, authority string, f func(ctx context.Context) error) error
}
