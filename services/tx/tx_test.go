package tx

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/fault"
)

func TestSimulationError(t *testing.T) {
	programs := []solana.PublicKey{solana.ComputeBudgetProgramID, solana.ComputeBudgetProgramID, drift.Program()}
	tests := []struct {
		name string
		err  string
		logs []string
		want map[string]any // the answer's fields
	}{
		{"an IDL error of the protocol's instruction", `{"InstructionError":[2,{"Custom":6003}]}`, nil,
			map[string]any{"code": uint32(6003), "name": "InsufficientCollateral", "error": "Insufficient collateral",
				"details": hints["InsufficientCollateral"]}},
		{"an IDL error without a hint", `{"InstructionError":[2,{"Custom":6000}]}`, nil,
			map[string]any{"code": uint32(6000), "name": "InvalidSpotMarketAuthority", "details": "Please review the error message and try again."}},
		{"Anchor's own error, named by the log", `{"InstructionError":[2,{"Custom":3012}]}`,
			[]string{"Program log: AnchorError caused by account: user_token_account. Error Code: AccountNotInitialized. Error Number: 3012. Error Message: The program expected this account to be already initialized."},
			map[string]any{"code": uint32(3012), "name": "AccountNotInitialized", "error": "The program expected this account to be already initialized"}},
		{"a custom error of another program is not the protocol's", `{"InstructionError":[0,{"Custom":6003}]}`, nil,
			map[string]any{"code": nil, "error": `Transaction simulation failed: {"InstructionError":[0,{"Custom":6003}]}`}},
		{"an instruction past the end", `{"InstructionError":[7,{"Custom":6003}]}`, nil, map[string]any{"code": nil}},
		{"a runtime error", `"BlockhashNotFound"`, nil, map[string]any{"code": nil, "error": `Transaction simulation failed: "BlockhashNotFound"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := simulationError(&rpc.Simulation{Err: json.RawMessage(tt.err), Logs: tt.logs}, programs)
			var pe *ProgramError
			if !errors.As(err, &pe) || fault.CodeOf(err) != fault.Invalid {
				t.Fatalf("%v is no 400 ProgramError", err)
			}
			for k, v := range tt.want {
				if got := pe.ErrorFields()[k]; got != v {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
		})
	}
}

func TestDecimalUnits(t *testing.T) {
	tests := []struct {
		in       string
		decimals int
		want     uint64
		ok       bool
	}{
		{"1", 6, 1_000_000, true},
		{"100.50", 6, 100_500_000, true},
		{".5", 6, 500_000, true},
		{"5.", 6, 5_000_000, true},
		{"0.000001", 6, 1, true},
		{"0.0000001", 6, 0, false},
		{"0", 6, 0, false},
		{"0.000", 6, 0, false},
		{"-1", 6, 0, false},
		{"+1", 6, 0, false},
		{"1e3", 6, 0, false},
		{"1,5", 6, 0, false},
		{".", 6, 0, false},
		{"", 6, 0, false},
		{"18446744073709.551615", 6, 18446744073709551615, true},
		{"18446744073709.551616", 6, 0, false},
		{"1.5", 0, 0, false},
		{"12", 0, 12, true},
	}
	for _, tt := range tests {
		got, ok := Decimal(tt.in).units(tt.decimals)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%q at %d decimals: %d %v, want %d %v", tt.in, tt.decimals, got, ok, tt.want, tt.ok)
		}
	}
}
