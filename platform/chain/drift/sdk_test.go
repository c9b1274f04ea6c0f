package drift_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
)

// sdkCases is how many randomised events of each type go through both decoders.
const sdkCases = 200

// TestSDKDecodesAlike is the differential test against the protocol's official TypeScript SDK
// (@drift-labs/sdk 2.156.0 and its anchor 0.29 coder, run offline under node by tools/sdkdiff):
// randomised events of every type of the IDL, encoded by this package, decode to the same values
// in both, field by field; an old, shorter layout decodes here to what the SDK makes of the same
// bytes padded with zeros to today's layout (the SDK cannot read the short bytes themselves); and
// the real sample lines decode alike where the SDK can read them. scripts/deps installs node and
// the SDK; -short skips the test.
func TestSDKDecodesAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the TypeScript SDK under node")
	}
	dir := sdkDir(t)
	rng := rand.New(rand.NewPCG(1, 2))
	type sent struct {
		name   string
		want   any // this package's reading, in the SDK's conventions
		padded bool
	}
	var cases []sent
	var input strings.Builder
	add := func(name string, data []byte, want any, padded bool) {
		cases = append(cases, sent{name, want, padded})
		input.WriteString(base64.StdEncoding.EncodeToString(data) + "\n")
	}
	perType := map[string]int{}
	for _, proto := range allEvents() {
		for i := range sdkCases {
			e := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(drift.Event)
			randomise(reflect.ValueOf(e).Elem(), rng)
			full, err := e.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: %v", e.EventName(), err)
			}
			add(e.EventName(), full, sdkJSON(reflect.ValueOf(e).Elem(), -1), false)
			perType[e.EventName()]++
			// Every fourth case also as an old layout: the first fields only.
			fields := reflect.ValueOf(e).Elem().NumField() - 1 // less Absent
			if i%4 != 0 || fields < 2 {
				continue
			}
			keep := 1 + rng.IntN(fields-1)
			short, err := drift.DecodeEvent(full) // a copy to cut down
			if err != nil {
				t.Fatal(err)
			}
			reflect.ValueOf(short).Elem().FieldByName("Absent").SetInt(int64(fields - keep))
			shortBytes, err := short.MarshalBinary()
			if err != nil {
				t.Fatalf("%s cut to %d fields: %v", e.EventName(), keep, err)
			}
			got, err := drift.DecodeEvent(shortBytes)
			if err != nil {
				t.Fatalf("%s cut to %d fields: %v", e.EventName(), keep, err)
			}
			padded := append(shortBytes, make([]byte, len(full)-len(shortBytes))...)
			add(e.EventName(), padded, sdkJSON(reflect.ValueOf(got).Elem(), keep), true)
		}
	}
	for _, s := range MustReadJSONL[eventSample](t, "events.jsonl") {
		data := MustBase64(t, s.Line)
		e, err := drift.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		add(e.EventName(), data, sdkJSON(reflect.ValueOf(e).Elem(), -1), false)
	}

	cmd := exec.Command("node", "decode.js")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(input.String())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node decode.js: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	var i, sdkRefused, differ int
	for ; sc.Scan(); i++ {
		c := cases[i]
		var got struct {
			Name  string         `json:"name"`
			Data  map[string]any `json:"data"`
			Error string         `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			t.Fatalf("case %d: %v: %s", i, err, sc.Bytes())
		}
		if got.Error != "" {
			// The real samples of old layouts: the SDK cannot read them, which is why the prefix rule exists.
			sdkRefused++
			continue
		}
		if got.Name != c.name {
			t.Errorf("case %d: the SDK decoded a %s, want %s", i, got.Name, c.name)
			continue
		}
		want := c.want.(map[string]any)
		if c.padded { // the padding's fields are not this package's to say
			for k := range got.Data {
				if _, ok := want[k]; !ok {
					delete(got.Data, k)
				}
			}
		}
		if before := differ; !sameJSON(t, fmt.Sprintf("case %d %s", i, c.name), want, got.Data, &differ) && before == 0 {
			t.Logf("case %d: ours %v\nSDK's %v", i, want, got.Data)
		}
	}
	if i != len(cases) {
		t.Fatalf("node answered %d of %d cases", i, len(cases))
	}
	if sdkRefused > 12 {
		t.Errorf("the SDK refused %d cases: more than the 12 real samples of old layouts", sdkRefused)
	}
	t.Logf("%d cases (%d per event type, a quarter of them again as old layouts, and the real samples); the SDK refused %d old real samples; %d fields differ",
		len(cases), sdkCases, sdkRefused, differ)
	if len(perType) != 26 {
		t.Errorf("%d event types, want 26", len(perType))
	}
}

// sdkDir is tools/sdkdiff with the SDK installed.
func sdkDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "tools", "sdkdiff")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@drift-labs", "sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed in %s (scripts/deps installs it): %v", dir, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("no node on PATH (scripts/deps installs it)")
	}
	return dir
}

// sdkJSON is toJSON with enum variants in lower case, as decode.js writes them: anchor camel-cases
// the IDL's names its own way ("OrderFilledWithAMM" becomes "orderFilledWithAmm"), and the
// comparison is of the variant, not of the casing.
func sdkJSON(v reflect.Value, fields int) any {
	return lowerEnums(v, toJSON(v, fields))
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

// sameJSON compares as compareJSON does, counting the differing fields into n, and reports whether
// none differed.
func sameJSON(t *testing.T, path string, want, got any, n *int) bool {
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

// randomise gives every field of v a random value within its type: integers over their whole range,
// options None or Some, Vecs and Strings of 0 to 3 items, enums any of their variants.
func randomise(v reflect.Value, rng *rand.Rand) {
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
				randomise(v.FieldByName("Value"), rng)
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).Tag.Get("idl") != "-" && v.Type().Field(i).IsExported() {
				randomise(v.Field(i), rng)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			randomise(v.Index(i), rng)
		}
	case reflect.Slice:
		n := rng.IntN(4)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			randomise(v.Index(i), rng)
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
