package bench_test

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
)

// chainRounds alternate the decoder and its baseline this many times, each for chainRoundTime, so
// that both see the same machine.
const (
	chainRounds    = 7
	chainRoundTime = time.Second
)

// BenchmarkChainDecode: events per second on one core, from the base64 of a log line to a decoded
// event (drift.DecodeEvent, what the indexer runs per line), over the real mainnet event lines of
// the chain package's samples. The baseline, in the same run, only base64-decodes the same lines and
// reads their bytes with encoding/binary. Target: the decoder at 0.5 of the baseline or better.
func BenchmarkChainDecode(b *testing.B) {
	lines := chainLines(b)
	buf := make([]byte, 4096)
	var sink uint64
	baseline := func(line []byte) {
		n, err := base64.StdEncoding.Decode(buf, line)
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off+8 <= n; off += 8 {
			sink += binary.LittleEndian.Uint64(buf[off:])
		}
	}
	decode := func(line []byte) {
		n, err := base64.StdEncoding.Decode(buf, line)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := drift.DecodeEvent(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
	rate := func(f func([]byte)) float64 {
		start, n := time.Now(), 0
		for time.Since(start) < chainRoundTime {
			for _, l := range lines {
				f(l)
			}
			n += len(lines)
		}
		return float64(n) / time.Since(start).Seconds()
	}
	for range b.N {
		var ratios, decoded, bare []float64
		for range chainRounds {
			base := rate(baseline)
			dec := rate(decode)
			bare, decoded, ratios = append(bare, base), append(decoded, dec), append(ratios, dec/base)
		}
		best := ratios[0]
		for _, r := range ratios {
			best = max(best, r)
		}
		b.Logf("RESULT chain decode, one core, %d real event lines: %.0f events/s decoded against %.0f base64+binary (medians of %d rounds); ratio median %.2f, best %.2f, rounds %.2f (target 0.5)",
			len(lines), median(decoded), median(bare), chainRounds, median(ratios), best, ratios)
	}
	_ = sink
}

// chainLines are the payloads of the chain package's real event lines.
func chainLines(b *testing.B) [][]byte {
	f, err := os.Open(filepath.Join("..", "..", "platform", "chain", "drift", "testdata", "events.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s struct {
			Line string `json:"line"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			b.Fatal(err)
		}
		out = append(out, []byte(s.Line))
	}
	if err := sc.Err(); err != nil || len(out) == 0 {
		b.Fatalf("the chain samples: %v, %d lines", err, len(out))
	}
	return out
}
