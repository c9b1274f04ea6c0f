package drift

import "fmt"

// Error is one of the program's errors, as its IDL lists them: what a failed transaction or
// simulation reports as "custom program error: 0x..." (the code) or in an AnchorError log line.
// ErrorByCode, generated from the IDL, finds one by its code.
type Error struct {
	Code uint32 // the custom program error's number, 6000 and up
	Name string // the Rust variant, e.g. "InsufficientCollateral"
	Msg  string // the program's message for it
}

func (e Error) Error() string {
	return fmt.Sprintf("drift: program error %d %s: %s", e.Code, e.Name, e.Msg)
}
