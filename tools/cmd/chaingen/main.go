// Command chaingen writes the Go types of the Drift program's events and accounts, with their
// Borsh decoders and encoders, its error table, and builders of the instructions tidemark sends,
// from the program's Anchor IDL (make generate). The IDL is a copy in
// the repository, so that the next program version is a new copy and a regeneration.
//
// Run from the repository root; -idl and -out default to platform/chain/drift.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// defaultAccounts are the accounts tidemark reads: the exchange's state, the markets, and users.
const defaultAccounts = "State,PerpMarket,SpotMarket,User,UserStats"

func main() {
	idlPath := flag.String("idl", "platform/chain/drift/idl.json", "the Anchor IDL (legacy 0.29 format)")
	out := flag.String("out", "platform/chain/drift", "the folder of the generated package")
	accounts := flag.String("accounts", defaultAccounts, "the accounts to generate, comma-separated; every event is generated")
	instructions := flag.String("instructions", defaultInstructions, "the instructions to generate builders for, comma-separated")
	flag.Parse()

	if err := run(*idlPath, *out, strings.Split(*accounts, ","), strings.Split(*instructions, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "chaingen:", err)
		os.Exit(1)
	}
}

func run(idlPath, out string, accounts, instructions []string) error {
	src, err := os.ReadFile(idlPath)
	if err != nil {
		return fmt.Errorf("read the IDL: %w", err)
	}
	files, err := Generate(src, Config{Package: filepath.Base(out), IDLFile: filepath.Base(idlPath), Accounts: accounts, Instructions: instructions})
	if err != nil {
		return fmt.Errorf("generate from %s: %w", idlPath, err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(out, f.Name), f.Content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
	}
	return nil
}
