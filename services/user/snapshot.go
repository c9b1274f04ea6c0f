package user

// Snapshot kinds the account routes serve, as protocol.account-snapshots names them.
const (
	SnapshotTrading = "trading"
	SnapshotEarn    = "earn"
	SnapshotVault   = "vault"
)
