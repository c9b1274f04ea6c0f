package solana

// AccountMeta is one account an instruction names, in its place in the instruction's list.
type AccountMeta struct {
	PublicKey  PublicKey
	IsSigner   bool
	IsWritable bool
}

// Instruction is a call of a program: the accounts it reads and writes, in the program's order,
// and its data (for an Anchor program, the instruction's discriminator and its borsh arguments).
type Instruction struct {
	ProgramID PublicKey
	Accounts  []AccountMeta
	Data      []byte
}
