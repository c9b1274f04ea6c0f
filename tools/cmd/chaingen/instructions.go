package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/tidemark/tidemark/platform/chain/anchor"
)

// defaultInstructions are the instructions tidemark builds transactions of (the /tx routes); add
// one here and run make generate for its builder.
const defaultInstructions = "deposit,withdraw,placeOrders,updateUserPerpPositionCustomMarginRatio," +
	"cancelOrdersByIds,cancelOrders,settleMultiplePnls," +
	"initializeRevenueShare,initializeRevenueShareEscrow,changeApprovedBuilder"

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

// instruction is an instruction to generate a builder of, resolved.
type instruction struct {
	name, goName string
	docs         []string
	args         *def // nil when the instruction takes none
	accounts     []instructionAccount
}

type instructionAccount struct {
	name, goName     string
	docs             []string
	writable, signer bool
}

// instructionDefs resolves the instructions of names, and every type their arguments use.
func (g *gen) instructionDefs(names []string) ([]*instruction, error) {
	var out []*instruction
	for _, name := range names {
		i := slices.IndexFunc(g.idl.Instructions, func(in idlInstruction) bool { return in.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("instruction %s is not in the IDL", name)
		}
		in := g.idl.Instructions[i]
		ins := &instruction{name: in.Name, goName: goName(in.Name), docs: in.Docs}
		for _, suffix := range []string{"Args", "Accounts"} {
			if _, clash := g.raw[ins.goName+suffix]; clash {
				return nil, fmt.Errorf("instruction %s: the IDL defines a type %s%s already", name, ins.goName, suffix)
			}
		}
		if len(in.Args) > 0 {
			d, err := g.structDef(ins.goName+"Args", nil, in.Args)
			if err != nil {
				return nil, fmt.Errorf("instruction %s: %w", name, err)
			}
			ins.args = d
		}
		seen := map[string]bool{}
		for _, a := range in.Accounts {
			if len(a.Accounts) > 0 && string(a.Accounts) != "null" {
				return nil, fmt.Errorf("instruction %s: account %s is a nested group, which the generator does not support yet", name, a.Name)
			}
			if a.IsOptional {
				return nil, fmt.Errorf("instruction %s: account %s is optional, which the generator does not support yet", name, a.Name)
			}
			gn := goName(a.Name)
			if seen[gn] {
				return nil, fmt.Errorf("instruction %s: account %s: Go name %s is taken", name, a.Name, gn)
			}
			seen[gn] = true
			ins.accounts = append(ins.accounts, instructionAccount{name: a.Name, goName: gn, docs: a.Docs, writable: a.IsMut, signer: a.IsSigner})
		}
		out = append(out, ins)
	}
	return out, nil
}

// snakeName is an IDL camelCase name as the Rust function is named, which the discriminator hashes:
// a word starts at a capital after a lower-case letter or a digit, and at the last capital of a
// run followed by a lower-case letter ("placeOrders": "place_orders").
func snakeName(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

func (g *gen) emitInstructions(b *bytes.Buffer, instructions []*instruction) {
	for _, in := range instructions {
		snake := snakeName(in.name)
		disc := anchor.InstructionDiscriminator(snake)
		n := in.goName

		dv := lowerFirst(n) + "Discriminator"
		fmt.Fprintf(b, "// %s is sha256(\"global:%s\")[:8], the first bytes of %s's data.\n", dv, snake, in.name)
		fmt.Fprintf(b, "var %s = %s\n\n", dv, discriminatorLiteral(disc))

		if in.args != nil {
			fmt.Fprintf(b, "// %sArgs are the arguments of the instruction %s, in their borsh order.\n", n, in.name)
			fmt.Fprintf(b, "type %sArgs struct {\n", n)
			g.structFields(b, in.args)
			b.WriteString("}\n\n")
			fmt.Fprintf(b, "func (x *%sArgs) append(b []byte) []byte {\n", n)
			for _, f := range in.args.fields {
				g.encode(b, "x."+f.goName, f.t, 0)
			}
			b.WriteString("return b\n}\n\n")
		}

		fmt.Fprintf(b, "// %sAccounts are the accounts of the instruction %s, in the program's order.\n", n, in.name)
		fmt.Fprintf(b, "type %sAccounts struct {\n", n)
		for _, a := range in.accounts {
			if len(a.docs) > 0 {
				comment(b, a.docs, "")
			}
			fmt.Fprintf(b, "%s solana.PublicKey `idl:%q` // %s\n", a.goName, a.name, flags(a))
		}
		b.WriteString("}\n\n")

		fmt.Fprintf(b, "// metas are the accounts as the instruction lists them, with the IDL's flags.\n")
		fmt.Fprintf(b, "func (a *%sAccounts) metas(remaining int) []solana.AccountMeta {\n", n)
		fmt.Fprintf(b, "m := make([]solana.AccountMeta, 0, %d+remaining)\n", len(in.accounts))
		b.WriteString("return append(m,\n")
		for _, a := range in.accounts {
			fmt.Fprintf(b, "solana.AccountMeta{PublicKey: a.%s, IsWritable: %t, IsSigner: %t},\n", a.goName, a.writable, a.signer)
		}
		b.WriteString(")\n}\n\n")

		comment(b, in.docs, "")
		if in.args != nil {
			fmt.Fprintf(b, "// New%sInstruction is the instruction %s of args, with the remaining accounts after its own.\n", n, in.name)
			fmt.Fprintf(b, "func New%sInstruction(args %sArgs, accounts %sAccounts, remaining ...solana.AccountMeta) solana.Instruction {\n", n, n, n)
			fmt.Fprintf(b, "data := args.append(append(make([]byte, 0, %d), %s[:]...))\n", 8+g.argsSize(in.args), dv)
		} else {
			fmt.Fprintf(b, "// New%sInstruction is the instruction %s, which takes no arguments, with the remaining\n// accounts after its own.\n", n, in.name)
			fmt.Fprintf(b, "func New%sInstruction(accounts %sAccounts, remaining ...solana.AccountMeta) solana.Instruction {\n", n, n)
			fmt.Fprintf(b, "data := %s // a copy\n", dv)
		}
		b.WriteString("return solana.Instruction{\nProgramID: Program(),\nAccounts: append(accounts.metas(len(remaining)), remaining...),\n")
		if in.args != nil {
			b.WriteString("Data: data,\n}\n}\n\n")
		} else {
			b.WriteString("Data: data[:],\n}\n}\n\n")
		}
	}
}

func flags(a instructionAccount) string {
	var f []string
	if a.writable {
		f = append(f, "writable")
	} else {
		f = append(f, "read-only")
	}
	if a.signer {
		f = append(f, "signer")
	}
	return strings.Join(f, ", ")
}

func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

// argsSize is the size to reserve for an instruction's arguments: their fixed size, or the least
// they take when they vary, plus room for a few items of a Vec.
func (g *gen) argsSize(d *def) int {
	if s := g.structSize(d); s > 0 {
		return s
	}
	least := 0
	for _, f := range d.fields {
		least += g.minSize(f.t)
	}
	return least + 64
}
