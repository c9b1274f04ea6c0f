package solana

import "encoding/binary"

// The ComputeBudget program's instruction tags (the borsh variant index of its
// ComputeBudgetInstruction enum).
const (
	computeBudgetSetUnitLimit = 2
	computeBudgetSetUnitPrice = 3
)

// SetComputeUnitLimit is the ComputeBudget instruction that caps the transaction's compute units;
// it names no accounts.
func SetComputeUnitLimit(units uint32) Instruction {
	return Instruction{
		ProgramID: ComputeBudgetProgramID,
		Data:      binary.LittleEndian.AppendUint32([]byte{computeBudgetSetUnitLimit}, units),
	}
}

// SetComputeUnitPrice is the ComputeBudget instruction that sets the priority fee, in
// micro-lamports per compute unit; it names no accounts.
func SetComputeUnitPrice(microLamports uint64) Instruction {
	return Instruction{
		ProgramID: ComputeBudgetProgramID,
		Data:      binary.LittleEndian.AppendUint64([]byte{computeBudgetSetUnitPrice}, microLamports),
	}
}
