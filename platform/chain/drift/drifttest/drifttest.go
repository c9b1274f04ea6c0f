// Package drifttest holds what the chain packages' tests share about Drift's events: every event
// type, random values of them, their JSON in the real samples' conventions, and the protocol's
// TypeScript SDK run under node as the oracle of the differential tests.
package drifttest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// AllEvents is a value of every event type of the IDL: 20 of them have no real sample.
func AllEvents() []drift.Event {
	return []drift.Event{
		new(drift.NewUserRecord), new(drift.DepositRecord), new(drift.SpotInterestRecord),
		new(drift.FundingPaymentRecord), new(drift.FundingRateRecord), new(drift.CurveRecord),
		new(drift.SignedMsgOrderRecord), new(drift.OrderRecord), new(drift.OrderActionRecord),
		new(drift.LPRecord), new(drift.LiquidationRecord), new(drift.SettlePnlRecord),
		new(drift.InsuranceFundRecord), new(drift.InsuranceFundStakeRecord), new(drift.InsuranceFundSwapRecord),
		new(drift.TransferProtocolIfSharesToRevenuePoolRecord), new(drift.SwapRecord),
		new(drift.SpotMarketVaultDepositRecord), new(drift.DeleteUserRecord), new(drift.FuelSweepRecord),
		new(drift.FuelSeasonRecord), new(drift.RevenueShareSettleRecord), new(drift.LPSettleRecord),
		new(drift.LPSwapRecord), new(drift.LPMintRedeemRecord), new(drift.LPBorrowLendDepositRecord),
	}
}

// JSON gives a decoded value in the samples' conventions (README "Value conventions"): 64- and
// 128-bit integers as decimal strings, smaller ones as numbers, keys as base58, [u8; N] as hex,
// enums by variant name, options as null or the value. It walks the Go value by its idl tags, a
// path independent of the generator's. fields limits a struct to its first fields (-1: all).
func JSON(v reflect.Value, fields int) any {
	switch x := v.Interface().(type) {
	case borsh.Uint128:
		return x.String()
	case borsh.Int128:
		return x.String()
	case solana.PublicKey:
		return x.String()
	case fmt.Stringer:
		// The generated enums.
		return x.String()
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Struct:
		if strings.HasPrefix(t.Name(), "Option[") {
			if !v.FieldByName("Some").Bool() {
				return nil
			}
			return JSON(v.FieldByName("Value"), -1)
		}
		m := map[string]any{}
		for i := range t.NumField() {
			tag := t.Field(i).Tag.Get("idl")
			if tag == "-" || (fields >= 0 && i >= fields) {
				continue
			}
			m[tag] = JSON(v.Field(i), -1)
		}
		return m
	case reflect.Array, reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return hex.EncodeToString(b)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = JSON(v.Index(i), -1)
		}
		return out
	case reflect.Int64:
		return fmt.Sprint(v.Int())
	case reflect.Uint64:
		return fmt.Sprint(v.Uint())
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return v.Int()
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return v.Uint()
	case reflect.Bool:
		return v.Bool()
	case reflect.String:
		return v.String()
	}
	panic("toJSON: unexpected " + t.String())
}

// SDKJSON is JSON with enum variants in lower case, as decode.js writes them: anchor camel-cases
// the IDL's names its own way ("OrderFilledWithAMM" becomes "orderFilledWithAmm"), and the
// comparison is of the variant, not of the casing.
func SDKJSON(v reflect.Value, fields int) any {
	return lowerEnums(v, JSON(v, fields))
}

func lowerEnums(v reflect.Value, j any) any {
	switch x := v.Interface().(type) {
	case fmt.Stringer:
		if _, ok := x.(interface{ Bytes() []byte }); ok {
			return j
		}
		if s, ok := j.(string); ok && v.Kind() == reflect.Uint8 {
			return strings.ToLower(s)
		}
		return j
	}
	switch v.Kind() {
	case reflect.Struct:
		if strings.HasPrefix(v.Type().Name(), "Option[") {
			if j == nil {
				return nil
			}
			return lowerEnums(v.FieldByName("Value"), j)
		}
		m, ok := j.(map[string]any)
		if !ok {
			return j
		}
		for i := range v.NumField() {
			tag := v.Type().Field(i).Tag.Get("idl")
			if _, present := m[tag]; present {
				m[tag] = lowerEnums(v.Field(i), m[tag])
			}
		}
		return m
	case reflect.Slice, reflect.Array:
		a, ok := j.([]any)
		if !ok {
			return j
		}
		for i := range a {
			a[i] = lowerEnums(v.Index(i), a[i])
		}
		return a
	}
	return j
}

// Randomise gives every field of v a random value within its type: integers over their whole range,
// options None or Some, Vecs and Strings of 0 to 3 items, enums any of their variants.
func Randomise(v reflect.Value, rng *rand.Rand) {
	switch x := v.Addr().Interface().(type) {
	case *borsh.Uint128:
		*x = borsh.Uint128{Lo: rng.Uint64(), Hi: rng.Uint64()}
		return
	case *borsh.Int128:
		*x = borsh.Int128{Lo: rng.Uint64(), Hi: rng.Uint64()}
		return
	case *solana.PublicKey:
		for i := range x {
			x[i] = byte(rng.Uint32())
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if strings.HasPrefix(v.Type().Name(), "Option[") {
			some := rng.IntN(2) == 0
			v.FieldByName("Some").SetBool(some)
			if some {
				Randomise(v.FieldByName("Value"), rng)
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("idl") != "-" && v.Type().Field(i).IsExported() {
				Randomise(v.Field(i), rng)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			Randomise(v.Index(i), rng)
		}
	case reflect.Slice:
		n := rng.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			Randomise(v.Index(i), rng)
		}
	case reflect.Uint8:
		if s, enum := v.Interface().(fmt.Stringer); enum {
			_ = s
			variants := 0
			for ; variants < 256; variants++ {
				v.SetUint(uint64(variants))
				if strings.HasSuffix(v.Interface().(fmt.Stringer).String(), ")") {
					break
				}
			}
			v.SetUint(uint64(rng.IntN(variants)))
			return
		}
		v.SetUint(uint64(rng.Uint32() % 256))
	case reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(rng.Uint64() >> (64 - v.Type().Bits()))
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.Uint64()) >> (64 - v.Type().Bits()))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", rng.IntN(1000)))
	}
}

// SDK runs script (decode.js, parse.js) of tools/sdkdiff under node with input on stdin and returns
// its standard output; root is the path from the calling test's package to the repository root.
func SDK(t testing.TB, root, script, input string) []byte {
	t.Helper()
	dir := filepath.Join(root, "tools", "sdkdiff")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@drift-labs", "sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed in %s (scripts/deps installs it): %v", dir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("no node on PATH (scripts/deps installs it)")
	}
	cmd := exec.Command("node", script)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return out
}

// Same compares two JSON values, numbers as numbers, reporting each differing field as an error of t
// and counting it into n; it reports whether none differed.
func Same(t testing.TB, path string, want, got any, n *int) bool {
	t.Helper()
	before := *n
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		if wok && gok {
			for k := range wm {
				walk(path+"."+k, wm[k], gm[k])
			}
			for k := range gm {
				if _, ok := wm[k]; !ok {
					*n++
					t.Errorf("%s.%s: the SDK decoded %v, which this package does not", path, k, gm[k])
				}
			}
			return
		}
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(g)
		var wn, gn any
		_ = json.Unmarshal(wb, &wn)
		_ = json.Unmarshal(gb, &gn)
		if !reflect.DeepEqual(wn, gn) {
			*n++
			t.Errorf("%s: the SDK decoded %v, this package %v", path, g, w)
		}
	}
	walk(path, want, got)
	return *n == before
}

// Samples reads a JSON Lines file of the real mainnet samples (platform/chain/drift/testdata, see
// its README), numbers kept exact (json.Number: ids above 2^53).
func Samples[T any](tb testing.TB, name string) []T {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(here), "..", "testdata", name)
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			tb.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Base64 decodes a sample's standard base64.
func Base64(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
