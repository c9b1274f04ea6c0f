package txlog_test

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/drift/drifttest"
	"github.com/tidemark/tidemark/platform/chain/txlog"
)

// Programs of the hand-made logs: Drift, the vault program, and programs that are neither.
const (
	driftID = drift.ProgramID
	vaultID = txlog.VaultProgramID
	jitID   = "J1TnP8zvVxbtF5KFp5xRmWuvG9McnhzmBd9XGfCyuxFP"
	tokenID = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"
)

func invoke(id string, depth int) string {
	return "Program " + id + " invoke [" + string(rune('0'+depth)) + "]"
}
func success(id string) string  { return "Program " + id + " success" }
func consumed(id string) string { return "Program " + id + " consumed 1000 of 200000 compute units" }
func data(b64 string) string    { return "Program data: " + b64 }
func logLine(b64 string) string { return "Program log: " + b64 }
func b64(b []byte) string       { return base64.StdEncoding.EncodeToString(b) }

// samples are base64 event lines of the real samples, by name.
type samples struct {
	oarLog  string // an OrderActionRecord of a Program log line (a fill)
	oarData string // an OrderActionRecord of a Program data line (a trigger)
	swap    string // a SwapRecord
	old     []byte // the bytes of an OrderActionRecord of 2024, 28 of today's fields
}

func mustSamples(tb testing.TB) samples {
	tb.Helper()
	ev := drifttest.Samples[eventSample](tb, "events.jsonl")
	if ev[0].Event != "OrderActionRecord" || ev[9].Event != "OrderActionRecord" || ev[8].Prefix != "Program data" || ev[16].Event != "SwapRecord" {
		tb.Fatal("events.jsonl is not the file these tests were written for")
	}
	return samples{oarLog: ev[9].Line, oarData: ev[8].Line, swap: ev[16].Line, old: mustBytes(tb, ev[0].Line)}
}

func TestRules(t *testing.T) {
	s := mustSamples(t)
	vaultRecord := anchor.EventDiscriminator("VaultDepositorRecord")
	vaultEvent := b64(append(vaultRecord[:], 1, 2, 3))
	unknown := b64([]byte("not an event at all"))
	cases := []struct {
		name      string
		log       []string
		failed    bool
		want      []expectedEvent
		truncated bool
		vault     int
	}{
		{
			name: "both prefixes, one event type",
			log:  []string{invoke(driftID, 1), data(s.oarData), logLine(s.oarLog), success(driftID)},
			want: []expectedEvent{{"OrderActionRecord", 0, 1, "Program data"}, {"OrderActionRecord", 1, 2, "Program log"}},
		},
		{
			name: "another program's data inside a Drift call",
			log: []string{
				invoke(driftID, 1), data(s.swap),
				invoke(tokenID, 2), data(s.swap), logLine(s.oarLog), consumed(tokenID), success(tokenID),
				logLine(s.oarLog), consumed(driftID), success(driftID),
			},
			want: []expectedEvent{{"SwapRecord", 0, 1, "Program data"}, {"OrderActionRecord", 1, 7, "Program log"}},
		},
		{
			name: "Drift through CPI from another program",
			log: []string{
				invoke(jitID, 1), logLine("Instruction: ArbPerp"), data(s.swap),
				invoke(driftID, 2), logLine(s.oarLog), success(driftID),
				logLine(s.oarLog), data(s.swap), success(jitID),
			},
			want: []expectedEvent{{"OrderActionRecord", 0, 4, "Program log"}},
		},
		{
			name: "lines while no program runs",
			log:  []string{data(s.swap), logLine(s.oarLog), invoke(driftID, 1), success(driftID), data(s.swap)},
			want: []expectedEvent{},
		},
		{
			name: "a failed program returns",
			log: []string{
				invoke(jitID, 1), invoke(driftID, 2), data(s.swap),
				"Program " + driftID + " failed: custom program error: 0x1770", data(s.swap),
			},
			want: []expectedEvent{{"SwapRecord", 0, 2, "Program data"}},
		},
		{
			name:      "Log truncated",
			log:       []string{invoke(driftID, 1), data(s.swap), "Log truncated", logLine(s.oarLog), success(driftID)},
			want:      []expectedEvent{{"SwapRecord", 0, 1, "Program data"}},
			truncated: true,
		},
		{
			name:      "Log truncated before any event",
			log:       []string{invoke(driftID, 1), "Log truncated"},
			want:      []expectedEvent{},
			truncated: true,
		},
		{
			name: "a failed transaction",
			log: []string{
				invoke(driftID, 1), data(s.swap), logLine(s.oarLog), data(b64(s.old[:20])),
				"Program " + driftID + " failed: custom program error: 0x1770",
			},
			failed: true,
			want:   []expectedEvent{},
		},
		{
			name: "bad base64",
			log: []string{
				invoke(driftID, 1), logLine("Instruction: PlaceAndTakePerpOrder"), data("!!!!" + s.swap),
				data(s.swap[:len(s.swap)-1]), data(s.swap + " " + s.swap), logLine(""), data(""),
				logLine(s.oarLog), success(driftID),
			},
			want: []expectedEvent{{"OrderActionRecord", 0, 7, "Program log"}},
		},
		{
			name: "unknown discriminator, or none",
			log: []string{
				invoke(driftID, 1), data(unknown), logLine(unknown), data(b64([]byte{1, 2, 3})),
				data(b64(s.old[:7])), data(vaultEvent), data(s.swap), success(driftID),
			},
			want: []expectedEvent{{"SwapRecord", 0, 6, "Program data"}},
		},
		{
			name: "vault events are numbered first",
			log: []string{
				invoke(driftID, 1), data(s.swap), success(driftID),
				invoke(vaultID, 1), data(vaultEvent), logLine(vaultEvent), data(unknown), data(s.swap),
				invoke(driftID, 2), data(s.swap), data(vaultEvent), success(driftID),
				success(vaultID),
			},
			want:  []expectedEvent{{"SwapRecord", 2, 1, "Program data"}, {"SwapRecord", 3, 9, "Program data"}},
			vault: 2,
		},
		{
			name: "vault events after the cut",
			log: []string{
				invoke(vaultID, 1), invoke(driftID, 2), data(s.swap), success(driftID),
				"Log truncated", data(vaultEvent),
			},
			want:      []expectedEvent{{"SwapRecord", 0, 2, "Program data"}},
			truncated: true,
		},
		{
			name: "runtime lines that are no stack moves",
			log: []string{
				invoke(driftID, 1), "Program return: " + driftID + " AQID", "Program consumption: 1000 units remaining",
				"Program " + driftID + " invoke", "Program " + driftID + " invoke [x", data(s.swap),
				success(driftID),
			},
			want: []expectedEvent{{"SwapRecord", 0, 5, "Program data"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := txlog.Parse(c.log, c.failed)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(r); !slices.Equal(got, c.want) {
				t.Errorf("events %+v, want %+v", got, c.want)
			}
			if r.Truncated != c.truncated || r.VaultEvents != c.vault {
				t.Errorf("truncated %v, %d vault events; want %v, %d", r.Truncated, r.VaultEvents, c.truncated, c.vault)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	s := mustSamples(t)
	cut := s.old[:len(s.old)-3] // ends inside its last field
	cases := []struct {
		name       string
		log        []string
		wantLine   int
		wantPrefix txlog.Prefix
		wantErr    error
		wantType   string // of the *drift.DecodeError, "" for none
		wantField  string
		wantOff    int
	}{
		{
			name:       "an event that ends inside a field",
			log:        []string{invoke(driftID, 1), data(s.swap), logLine(b64(cut)), success(driftID)},
			wantLine:   2,
			wantPrefix: txlog.PrefixLog,
			wantErr:    borsh.ErrEnd,
			wantType:   "OrderActionRecord", wantField: "oraclePrice", wantOff: len(s.old) - 8,
		},
		{
			name:       "an event cut after its discriminator",
			log:        []string{invoke(jitID, 1), invoke(driftID, 2), data(b64(s.old[:8]))},
			wantLine:   2,
			wantPrefix: txlog.PrefixData,
			wantErr:    borsh.ErrEnd,
			wantType:   "OrderActionRecord", wantField: "ts", wantOff: 8,
		},
		{
			name:       "a byte after the last field",
			log:        []string{invoke(driftID, 1), data(b64(append(mustBytes(t, s.swap), 0)))},
			wantLine:   1,
			wantPrefix: txlog.PrefixData,
			wantErr:    borsh.ErrTrailing,
			wantType:   "SwapRecord", wantOff: len(mustBytes(t, s.swap)),
		},
		{
			name:     "a return while no program runs",
			log:      []string{invoke(driftID, 1), success(driftID), success(driftID), data(s.swap)},
			wantLine: 2,
			wantErr:  txlog.ErrUnbalanced,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := txlog.Parse(c.log, false)
			if err == nil {
				t.Fatalf("parsed %+v, want an error", summary(r))
			}
			var le *txlog.LineError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is no *LineError", err)
			}
			if le.Line != c.wantLine || le.Prefix != c.wantPrefix || !errors.Is(err, c.wantErr) {
				t.Errorf("error %q: line %d, prefix %v; want %d, %v, %v", err, le.Line, le.Prefix, c.wantLine, c.wantPrefix, c.wantErr)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %q names no line", err)
			}
			var de *drift.DecodeError
			if c.wantType == "" {
				if errors.As(err, &de) {
					t.Errorf("error %q is a decoding error", err)
				}
				return
			}
			if !errors.As(err, &de) {
				t.Fatalf("error %q is no *drift.DecodeError", err)
			}
			if de.Type != c.wantType || de.Field != c.wantField || de.Offset != c.wantOff {
				t.Errorf("error %q: %s, field %q, offset %d; want %s, %q, %d", err, de.Type, de.Field, de.Offset, c.wantType, c.wantField, c.wantOff)
			}
			if !strings.Contains(err.Error(), c.wantType) || !strings.Contains(err.Error(), "offset") {
				t.Errorf("error %q names neither the event nor the offset", err)
			}
		})
	}
}

func mustBytes(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestPrefixString(t *testing.T) {
	for p, want := range map[txlog.Prefix]string{txlog.PrefixData: "Program data", txlog.PrefixLog: "Program log", 0: "Prefix(0)"} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
	}
}
