package txlog_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// FuzzParse runs the parser over hostile logs, one line per "\n". The seeds are the real
// transactions, as they are, failed, cut by "Log truncated" and with an event line cut short, so
// that the short run of go test covers every path.
func FuzzParse(f *testing.F) {
	for _, tx := range drifttest.Samples[txSample](f, "transactions.jsonl") {
		msgs := tx.LogMessages
		f.Add(strings.Join(msgs, "\n"), false)
		f.Add(strings.Join(msgs, "\n"), true)
		truncated := slices.Insert(slices.Clone(msgs), len(msgs)/2, "Log truncated")
		f.Add(strings.Join(truncated, "\n"), false)
		for _, e := range tx.ExpectedEvents {
			cut := slices.Clone(msgs)
			cut[e.LogIndex] = cut[e.LogIndex][:len(cut[e.LogIndex])*3/4]
			f.Add(strings.Join(cut, "\n"), false)
		}
	}
	f.Add("", false)
	f.Add("Program "+drift.ProgramID+" success", false)
	f.Fuzz(func(t *testing.T, text string, failed bool) {
		lines := strings.Split(text, "\n")
		r, err := txlog.Parse(lines, failed)
		if err != nil {
			checkRefusal(t, lines, err)
			return
		}
		if failed {
			if len(r.Events) != 0 || r.Truncated || r.VaultEvents != 0 {
				t.Fatalf("a failed transaction gave %+v", r)
			}
			return
		}
		cut := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Log truncated") })
		if r.Truncated != (cut >= 0) {
			t.Fatalf("truncated %v, first Log truncated line %d", r.Truncated, cut)
		}
		last := -1
		for k, e := range r.Events {
			if e.TxSigIndex != r.VaultEvents+k || e.LogIndex <= last || cut >= 0 && e.LogIndex >= cut {
				t.Fatalf("event %d: txSigIndex %d, line %d, after line %d, cut at %d, %d vault events",
					k, e.TxSigIndex, e.LogIndex, last, cut, r.VaultEvents)
			}
			last = e.LogIndex
			payload, ok := strings.CutPrefix(lines[e.LogIndex], e.Prefix.String()+": ")
			if !ok {
				t.Fatalf("event %d: line %d %q is no %v line", k, e.LogIndex, lines[e.LogIndex], e.Prefix)
			}
			// What decodes is exactly the bytes of its line.
			want, err := base64.StdEncoding.DecodeString(payload)
			if err != nil {
				t.Fatalf("event %d: line %d: %v", k, e.LogIndex, err)
			}
			got, err := e.MarshalBinary()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("event %d: %s encoded to %x, %v; its line holds %x", k, e.EventName(), got, err, want)
			}
		}
	})
}

// checkRefusal checks that err is a refusal the parser may give of lines.
func checkRefusal(t *testing.T, lines []string, err error) {
	t.Helper()
	var le *txlog.LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %v is no *LineError", err)
	}
	if le.Line < 0 || le.Line >= len(lines) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("error %q: line %d of %d", err, le.Line, len(lines))
	}
	if le.Prefix == 0 {
		if !errors.Is(err, txlog.ErrUnbalanced) {
			t.Fatalf("error %q of a stack line is not ErrUnbalanced", err)
		}
		return
	}
	payload, ok := strings.CutPrefix(lines[le.Line], le.Prefix.String()+": ")
	if !ok {
		t.Fatalf("error %q: line %q is no %v line", err, lines[le.Line], le.Prefix)
	}
	data, derr := base64.StdEncoding.DecodeString(payload)
	var de *drift.DecodeError
	if derr != nil || !errors.As(err, &de) || de.Type == "event" || de.Offset < 0 || de.Offset > len(data) {
		t.Fatalf("error %q of a line of %d bytes (%v)", err, len(data), derr)
	}
	if !strings.Contains(err.Error(), de.Type) || !strings.Contains(err.Error(), "offset") {
		t.Fatalf("error %q names neither the event nor the offset", err)
	}
}
