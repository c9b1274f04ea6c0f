package main

import "encoding/json"

type idlInstruction struct {
	Name     string               `json:"name"`
	Docs     []string             `json:"docs"`
	Accounts []idlInstructionAcct `json:"accounts"`
	Args     []idlField           `json:"args"`
}

// idlInstructionAcct is an account of an instruction; Accounts is set for a nested group, which
// the generator refuses.
type idlInstructionAcct struct {
	Name       string          `json:"name"`
	IsMut      bool            `json:"isMut"`
	IsSigner   bool            `json:"isSigner"`
	IsOptional bool            `json:"isOptional"`
	Docs       []string        `json:"docs"`
	Accounts   json.RawMessage `json:"accounts"`
}
