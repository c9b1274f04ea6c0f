package txlog

import "github.com/tidemark/tidemark/platform/chain/anchor"

// VaultProgramID is the address of Drift's vault program (drift-labs/drift-vaults). The Data API
// parses its events from the same log with the same parser and numbers them before Drift's, so a
// Drift event's txSigIndex depends on how many it logged. tidemark does not index vault events, it
// only counts them.
const VaultProgramID = "vAuLTsyrvSfZRuRB3XgvkPwNGgYSs9YRYymVebLKoxR"

// isVaultEvent reports whether data, a vault program's line decoded, starts with the discriminator
// of one of its events: what its anchor coder decodes rather than skips. The vault program writes
// its events with emit!, so they come as "Program data: ", but its coder reads "Program log: "
// lines too, and so does this.
func isVaultEvent(data []byte) bool {
	return len(data) >= anchor.DiscriminatorSize && vaultEventName(littleEndian(data)) != ""
}

// vaultEventName is the name of the vault program's event whose discriminator (its first eight
// bytes, little-endian) is disc, "" for none. The events are those of the vault program's IDL,
// version 0.9.0 (ts/sdk/src/idl/drift_vaults.json); a test checks each against its name.
func vaultEventName(disc uint64) string {
	switch disc {
	case 0x8610aaa48b158126:
		return "VaultRecord"
	case 0x0b95d8134a0bacb1:
		return "VaultDepositorRecord"
	case 0x4c064a6907de3524:
		return "VaultDepositorV1Record"
	case 0xb79a68add40a829a:
		return "ShareTransferRecord"
	case 0x5706f9e021778913:
		return "FuelSeasonRecord" // the name, and so the discriminator, of a Drift event too
	case 0x012f8dd8bcf1581e:
		return "FeeUpdateRecord"
	case 0xc107743c0e70b493:
		return "ManagerBorrowRecord"
	case 0x40434a1b0f258bdc:
		return "ManagerRepayRecord"
	case 0x9435ea266b583fcb:
		return "ManagerUpdateBorrowRecord"
	}
	return ""
}
