package drift_test

import (
	"encoding/base64"
	"encoding/binary"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
)

// The decoders against the floor a later bench compares them with: base64 and a bare loop of
// encoding/binary over the same bytes.

func benchLines(b *testing.B) []string {
	var lines []string
	for _, s := range drifttest.Samples[eventSample](b, "events.jsonl") {
		lines = append(lines, s.Line)
	}
	return lines
}

func BenchmarkDecodeEvent(b *testing.B) {
	lines := benchLines(b)
	buf := make([]byte, 1024)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		line := lines[i%len(lines)]
		n, err := base64.StdEncoding.Decode(buf, []byte(line))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := drift.DecodeEvent(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalOrderActionRecord(b *testing.B) {
	lines := benchLines(b)
	buf := make([]byte, 1024)
	var e drift.OrderActionRecord
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		line := lines[[]int{0, 2, 8, 9}[i%4]]
		n, err := base64.StdEncoding.Decode(buf, []byte(line))
		if err != nil {
			b.Fatal(err)
		}
		if err := e.UnmarshalBinary(buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBaseline(b *testing.B) {
	lines := benchLines(b)
	buf := make([]byte, 1024)
	var sink uint64
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		line := lines[i%len(lines)]
		n, err := base64.StdEncoding.Decode(buf, []byte(line))
		if err != nil {
			b.Fatal(err)
		}
		for off := 0; off+8 <= n; off += 8 {
			sink += binary.LittleEndian.Uint64(buf[off:])
		}
	}
	_ = sink
}

func BenchmarkUnmarshalUser(b *testing.B) {
	data := drifttest.Base64(b, drifttest.Samples[accountSample](b, "accounts.jsonl")[0].Base64)
	var u drift.User
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := u.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUnmarshalOrderActionRecordBytes(b *testing.B) {
	data := sampleBytes(b, 9)
	var e drift.OrderActionRecord
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := e.UnmarshalBinary(data); err != nil {
			b.Fatal(err)
		}
	}
}
