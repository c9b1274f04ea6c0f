package txlog

import (
	"encoding/binary"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/anchor"
)

func TestVaultEventDiscriminators(t *testing.T) {
	// The vault program's IDL 0.9.0, its events in order.
	names := []string{
		"VaultRecord", "VaultDepositorRecord", "VaultDepositorV1Record", "ShareTransferRecord",
		"FuelSeasonRecord", "FeeUpdateRecord", "ManagerBorrowRecord", "ManagerRepayRecord",
		"ManagerUpdateBorrowRecord",
	}
	for _, name := range names {
		d := anchor.EventDiscriminator(name)
		if got := vaultEventName(binary.LittleEndian.Uint64(d[:])); got != name {
			t.Errorf("discriminator %x of %s is named %q", d, name, got)
		}
		if !isVaultEvent(d[:]) || isVaultEvent(d[:7]) {
			t.Errorf("%s: a whole discriminator is no event, or seven bytes are one", name)
		}
	}
	d := anchor.EventDiscriminator("DepositRecord")
	if isVaultEvent(d[:]) {
		t.Error("Drift's DepositRecord counted as a vault event")
	}
}
