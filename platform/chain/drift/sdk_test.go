package drift_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
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
	for _, proto := range drifttest.AllEvents() {
		for i := range sdkCases {
			e := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(drift.Event)
			drifttest.Randomise(reflect.ValueOf(e).Elem(), rng)
			full, err := e.MarshalBinary()
			if err != nil {
				t.Fatalf("%s: %v", e.EventName(), err)
			}
			add(e.EventName(), full, drifttest.SDKJSON(reflect.ValueOf(e).Elem(), -1), false)
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
			add(e.EventName(), padded, drifttest.SDKJSON(reflect.ValueOf(got).Elem(), keep), true)
		}
	}
	for _, s := range drifttest.Samples[eventSample](t, "events.jsonl") {
		data := drifttest.Base64(t, s.Line)
		e, err := drift.DecodeEvent(data)
		if err != nil {
			t.Fatal(err)
		}
		add(e.EventName(), data, drifttest.SDKJSON(reflect.ValueOf(e).Elem(), -1), false)
	}

	out := drifttest.SDK(t, filepath.Join("..", "..", ".."), "decode.js", input.String())
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
		if before := differ; !drifttest.Same(t, fmt.Sprintf("case %d %s", i, c.name), want, got.Data, &differ) && before == 0 {
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
