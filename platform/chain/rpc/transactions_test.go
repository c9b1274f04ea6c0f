package rpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

func TestSimulateTransaction(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		failed bool
		units  uint64
	}{
		{"passes", `{"context":{"slot":5},"value":{"err":null,"logs":["Program log: ok"],"accounts":null,"unitsConsumed":4200,"returnData":null}}`, false, 4200},
		{"a program error", `{"context":{"slot":5},"value":{"err":{"InstructionError":[2,{"Custom":6003}]},"logs":["x"],"unitsConsumed":10}}`, true, 10},
		{"a runtime error", `{"context":{"slot":5},"value":{"err":"BlockhashNotFound","logs":[],"unitsConsumed":0}}`, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &endpoint{answers: []func(http.ResponseWriter){result(tt.answer)}}
			c, _ := client(t, e, rpc.Options{})
			sim, err := c.SimulateTransaction(context.Background(), []byte{1, 2, 3},
				rpc.SimulateOptions{Commitment: rpc.Processed, ReplaceRecentBlockhash: true})
			if err != nil {
				t.Fatal(err)
			}
			if sim.Failed() != tt.failed || sim.UnitsConsumed != tt.units {
				t.Errorf("failed %v units %d, want %v %d", sim.Failed(), sim.UnitsConsumed, tt.failed, tt.units)
			}
			params := e.requests[0]["params"].([]any)
			cfg := params[1].(map[string]any)
			if params[0] != "AQID" || cfg["encoding"] != "base64" || cfg["replaceRecentBlockhash"] != true || cfg["sigVerify"] != false {
				t.Errorf("params %v", params)
			}
		})
	}
}

func TestSendTransaction(t *testing.T) {
	sig := strings.Repeat("3", 87) // base58 of 64 bytes
	e := &endpoint{answers: []func(http.ResponseWriter){result(fmt.Sprintf("%q", sig))}}
	c, _ := client(t, e, rpc.Options{})
	got, err := c.SendTransaction(context.Background(), []byte{9}, false, rpc.Confirmed)
	if err != nil || got != sig {
		t.Fatalf("%q, %v", got, err)
	}
	// A preflight failure is final, and keeps the simulation for the caller.
	e = &endpoint{answers: []func(http.ResponseWriter){func(w http.ResponseWriter) {
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Transaction simulation failed: Error processing Instruction 2: custom program error: 0x1773","data":{"err":{"InstructionError":[2,{"Custom":6003}]},"logs":["a"]}}}`)
	}}}
	c, codes := client(t, e, rpc.Options{})
	_, err = c.SendTransaction(context.Background(), []byte{9}, false, rpc.Confirmed)
	var re *rpc.Error
	if !errors.As(err, &re) || re.Code != rpc.CodeSendTransactionFailed || len(*codes) != 1 {
		t.Fatalf("%v after %v", err, *codes)
	}
	var sim rpc.Simulation
	if err := json.Unmarshal(re.Data, &sim); err != nil || !sim.Failed() {
		t.Fatalf("data %s: %v", re.Data, err)
	}
	// An answer that is no signature is not taken for one.
	e = &endpoint{answers: []func(http.ResponseWriter){result(`"0OIl"`)}}
	c, _ = client(t, e, rpc.Options{Attempts: 1})
	if _, err := c.SendTransaction(context.Background(), []byte{9}, true, rpc.Confirmed); err == nil {
		t.Fatal("took 0OIl for a signature")
	}
}

func TestNumbered(t *testing.T) {
	owner := testKeys(1)[0]
	keys := testKeys(400)
	address := func(i uint16) solana.PublicKey { return keys[i] }
	tests := []struct {
		name    string
		exists  int // accounts 0..exists-1 exist
		hole    int // -1: none; else this one is missing
		foreign int // -1: none; else this one has another owner
		want    int
		wantErr bool
	}{
		{"none", 0, -1, -1, 0, false},
		{"within a chunk", 7, -1, -1, 7, false},
		{"a whole chunk and more", 130, -1, -1, 130, false},
		{"exactly a chunk", 100, -1, -1, 100, false},
		{"a hole", 20, 5, -1, 0, true},
		{"another owner's", 20, -1, 3, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := map[string]int{}
			for i, k := range keys {
				index[k.String()] = i
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct{ Params []any }
				_ = json.NewDecoder(r.Body).Decode(&req)
				var vals []string
				for _, k := range req.Params[0].([]any) {
					i := index[k.(string)]
					switch {
					case i >= tt.exists || i == tt.hole:
						vals = append(vals, "null")
					default:
						o := owner.String()
						if i == tt.foreign {
							o = "11111111111111111111111111111111"
						}
						vals = append(vals, fmt.Sprintf(`{"data":["","base64"],"owner":%q,"lamports":1}`, o))
					}
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":1},"value":[%s]}}`, strings.Join(vals, ","))
			}))
			defer srv.Close()
			c, err := rpc.New(rpc.Options{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, accounts, err := c.Numbered(context.Background(), address, owner, rpc.Confirmed)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			if len(got) != tt.want || len(accounts) != tt.want {
				t.Fatalf("%d accounts, want %d", len(got), tt.want)
			}
			for i := range got {
				if got[i] != keys[i] {
					t.Fatalf("account %d is %s", i, got[i])
				}
			}
		})
	}
}
