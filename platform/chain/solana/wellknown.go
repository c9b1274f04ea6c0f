package solana

import "fmt"

// Programs and sysvars that transactions name, by their fixed addresses.
var (
	SystemProgramID             = MustPublicKey("11111111111111111111111111111111")
	TokenProgramID              = MustPublicKey("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA")
	Token2022ProgramID          = MustPublicKey("TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb")
	AssociatedTokenProgramID    = MustPublicKey("ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL")
	ComputeBudgetProgramID      = MustPublicKey("ComputeBudget111111111111111111111111111111")
	AddressLookupTableProgramID = MustPublicKey("AddressLookupTab1e1111111111111111111111111")
	Ed25519SigVerifyProgramID   = MustPublicKey("Ed25519SigVerify111111111111111111111111111")
	SysvarRentID                = MustPublicKey("SysvarRent111111111111111111111111111111111")
)

// AssociatedTokenAddress is owner's associated token account for mint under tokenProgram (the SPL
// Token or the Token-2022 program): the PDA of the associated token program for the seeds owner,
// token program, mint. owner may itself be a PDA, as with spl-token's allowOwnerOffCurve.
func AssociatedTokenAddress(owner, mint, tokenProgram PublicKey) PublicKey {
	k, _, err := FindProgramAddress([][]byte{owner[:], tokenProgram[:], mint[:]}, AssociatedTokenProgramID)
	if err != nil {
		// Three 32-byte seeds are within the limits, and no bump off the curve among 256 does
		// not happen for a sha256 output.
		panic(fmt.Sprintf("solana: associated token address of %s for %s: %v", owner, mint, err))
	}
	return k
}
