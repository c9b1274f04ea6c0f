package main

import (
	"bytes"
	"fmt"
	"slices"
)

// checkErrors refuses an error table the lookup cannot serve: a code twice, or a name missing.
func checkErrors(errs []idlError) error {
	seen := map[uint32]string{}
	for _, e := range errs {
		if e.Name == "" {
			return fmt.Errorf("error %d has no name", e.Code)
		}
		if prev, ok := seen[e.Code]; ok {
			return fmt.Errorf("error code %d is both %s and %s", e.Code, prev, e.Name)
		}
		seen[e.Code] = e.Name
	}
	return nil
}

// emitErrors writes the program's errors as a table sorted by code, and its lookup. The program
// returns them as custom program errors (6000 and up), which is all a simulation's failure says.
func (g *gen) emitErrors(b *bytes.Buffer) {
	errs := slices.Clone(g.idl.Errors)
	slices.SortFunc(errs, func(a, b idlError) int { return int(a.Code) - int(b.Code) })

	b.WriteString("// programErrors are the program's errors, sorted by code.\nvar programErrors = [...]Error{\n")
	for _, e := range errs {
		fmt.Fprintf(b, "{Code: %d, Name: %q, Msg: %q},\n", e.Code, e.Name, e.Msg)
	}
	b.WriteString("}\n\n")
	b.WriteString("// ErrorByCode is the program's error of code (a custom program error's number), false when the\n// IDL has none of that code.\n")
	b.WriteString("func ErrorByCode(code uint32) (Error, bool) {\n")
	b.WriteString("i, ok := slices.BinarySearchFunc(programErrors[:], code, func(e Error, code uint32) int { return cmp.Compare(e.Code, code) })\n")
	b.WriteString("if !ok {\nreturn Error{}, false\n}\nreturn programErrors[i], true\n}\n")
}
