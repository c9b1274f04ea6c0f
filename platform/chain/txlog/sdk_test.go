package txlog_test

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
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// sdkTransactions is how many randomised transaction logs go through both parsers.
const sdkTransactions = 400

// The programs of the randomised logs beside Drift: one that logs data of its own (Jupiter's), and
// the compute budget program, which logs nothing.
var otherPrograms = []string{"JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4", "ComputeBudget111111111111111111111111111111"}

// TestSDKParsesAlike is the log parser's differential test against the protocol's official
// TypeScript SDK (its parseLogsWithRaw, run offline under node by tools/sdkdiff): randomised whole
// transaction logs (Drift called directly and through other programs, events of every type under
// both prefixes, other programs' data and text lines, now and then a Log truncated) give the same
// events in the same order in both, field by field.
func TestSDKParsesAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the TypeScript SDK under node")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var (
		logs   [][]string
		input  strings.Builder
		events int
	)
	perType := map[string]int{}
	for range sdkTransactions {
		l := randomLog(rng, perType)
		logs = append(logs, l)
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		input.Write(append(b, '\n'))
	}
	out := drifttest.SDK(t, filepath.Join("..", "..", ".."), "parse.js", input.String())
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 16<<20)
	var i, differ, truncated int
	for ; sc.Scan(); i++ {
		var sdk struct {
			Events []struct {
				Name string         `json:"name"`
				Data map[string]any `json:"data"`
			} `json:"events"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &sdk); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if sdk.Error != "" {
			t.Errorf("transaction %d: the SDK failed: %s", i, sdk.Error)
			continue
		}
		got, err := txlog.Parse(logs[i], false)
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
			continue
		}
		if got.Truncated {
			truncated++
		}
		if len(got.Events) != len(sdk.Events) {
			t.Errorf("transaction %d: %d events here, %d in the SDK:\n%s", i, len(got.Events), len(sdk.Events), strings.Join(logs[i], "\n"))
			continue
		}
		for j, e := range got.Events {
			events++
			if e.EventName() != sdk.Events[j].Name {
				t.Errorf("transaction %d event %d: %s here, %s in the SDK", i, j, e.EventName(), sdk.Events[j].Name)
				continue
			}
			want := drifttest.SDKJSON(reflect.ValueOf(e.Event).Elem(), -1)
			drifttest.Same(t, fmt.Sprintf("transaction %d event %d %s", i, j, e.EventName()), want, sdk.Events[j].Data, &differ)
		}
	}
	if i != len(logs) {
		t.Fatalf("node answered %d of %d transactions", i, len(logs))
	}
	if len(perType) != 26 {
		t.Errorf("the logs carried %d event types, want all 26", len(perType))
	}
	t.Logf("%d transactions (%d cut by Log truncated), %d events alike in order, %d fields differ; events per type logged: %v",
		len(logs), truncated, events, differ, perType)
}

// randomLog is a transaction's log: one to four instructions of Drift or another program, each
// with text lines, Drift events under either prefix, other data, calls into other programs or into
// Drift (to a depth of four), its compute units and its success; a tenth of them cut by the
// runtime's Log truncated.
func randomLog(rng *rand.Rand, perType map[string]int) []string {
	all := drifttest.AllEvents()
	var logs []string
	var call func(program string, depth int)
	call = func(program string, depth int) {
		logs = append(logs, fmt.Sprintf("Program %s invoke [%d]", program, depth))
		for range rng.IntN(6) {
			switch rng.IntN(5) {
			case 0:
				logs = append(logs, "Program log: Instruction: PlaceOrders")
			case 1, 2:
				proto := all[rng.IntN(len(all))]
				e := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(drift.Event)
				drifttest.Randomise(reflect.ValueOf(e).Elem(), rng)
				data, err := e.MarshalBinary()
				if err != nil {
					panic(err)
				}
				prefix := "Program data: "
				if rng.IntN(2) == 0 {
					prefix = "Program log: "
				}
				if program == drift.ProgramID {
					perType[e.EventName()]++
				}
				logs = append(logs, prefix+base64.StdEncoding.EncodeToString(data))
			case 3:
				junk := make([]byte, 8+rng.IntN(40))
				for i := range junk {
					junk[i] = byte(rng.Uint32())
				}
				logs = append(logs, "Program data: "+base64.StdEncoding.EncodeToString(junk))
			case 4:
				if depth < 4 {
					next := drift.ProgramID
					if rng.IntN(2) == 0 {
						next = otherPrograms[rng.IntN(len(otherPrograms))]
					}
					call(next, depth+1)
				}
			}
		}
		logs = append(logs, fmt.Sprintf("Program %s consumed %d of 1400000 compute units", program, 1000+rng.IntN(100000)),
			fmt.Sprintf("Program %s success", program))
	}
	for range 1 + rng.IntN(4) {
		program := drift.ProgramID
		if rng.IntN(3) == 0 {
			program = otherPrograms[rng.IntN(len(otherPrograms))]
		}
		call(program, 1)
	}
	if rng.IntN(10) == 0 {
		logs = append(logs[:rng.IntN(len(logs))], "Log truncated")
	}
	return logs
}
