package service_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// tables are every table of the authority schema holding what was ingested.
var tables = []string{"if_stakes", "lp_mint_redeem", "accounts", "builder_accounts", "snapshots", "snapshot_days", "markets"}

func counts(t *testing.T, s *stack) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range tables {
		out[tb] = s.Count(t, "authority."+tb)
	}
	return out
}

// views are what the API answers about the seeded wallets, for comparing before and after.
func views(t *testing.T, s *stack) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, w := range []string{wallet, builder} {
		for _, p := range []string{"/insuranceFundStake", "/insuranceFundStake/2026/11", "/lpMintRedeem", "/lpMintRedeem/2026/11",
			"/accounts", "/snapshots/overview?days=1", "/snapshots/overview?days=3", "/snapshots/referrals?days=3"} {
			out[w+p] = s.Get(t, "/authority/"+w+p).Body.String()
		}
	}
	return out
}

// seedMessages are seed's messages, recorded rather than produced.
func seedMessages(t *testing.T) []events.Message {
	t.Helper()
	rec := &recordingStack{}
	seedInto(t, rec)
	return rec.msgs
}

// TestIngestRules: messages consumed again change nothing (replayed by a producer twice, or handed
// again after a crash between the database and the Kafka commits), and malformed ones of each topic go
// to the DLQ while the partition moves on.
func TestIngestRules(t *testing.T) {
	s := start(t, options{})
	msgs := seedMessages(t)
	s.Ingest(t, msgs...)
	before, seen := counts(t, s), views(t, s)
	for _, tb := range tables {
		if before[tb] == 0 {
			t.Fatalf("seed stored nothing in %s: %v", tb, before)
		}
	}

	s.Ingest(t, msgs...)
	s.Ingest(t, msgs...)
	if after := counts(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("replays changed the tables:\n before %v\n after  %v", before, after)
	}
	compareViews(t, seen, views(t, s), "replays")

	// Every message delivered again, as by an indexer that reads blocks again after a crash: the
	// consumer reads every topic from the start.
	s.Restart(t, "authority", true)
	late := ifStake(wallet, kittest.USDC, at("2026-11-19T12:00:00Z"), 9)
	s.Ingest(t, encode(t, events.TopicIFStakes, late)...)
	after := counts(t, s)
	if after["if_stakes"] != before["if_stakes"]+1 {
		t.Fatalf("after the crash: %d stakes, want %d", after["if_stakes"], before["if_stakes"]+1)
	}
	after["if_stakes"]--
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("the crash changed the tables:\n before %v\n after  %v", before, after)
	}
	s.WaitConsumed(t, s.Instance(t, "authority").Consumes()...)

	// Malformed messages of every topic: the DLQ gets them with a reason, and the good message after
	// them is stored.
	good := map[string]events.Record{
		events.TopicIFStakes:         ifStake(wallet, kittest.USDC, at("2026-11-19T13:00:00Z"), 10),
		events.TopicLPMintRedeem:     lpMint(wallet, at("2026-11-19T13:00:00Z"), 10),
		events.TopicNewUsers:         newUser(wallet, key(61), 3, at("2026-11-19T13:00:00Z")),
		events.TopicAccountSnapshots: trading(main, at("2026-11-19T13:30:00Z"), 1),
	}
	bad := map[string]func(){
		events.TopicIFStakes:         func() { good[events.TopicIFStakes].(*events.IFStake).Action = "hodl" },
		events.TopicLPMintRedeem:     func() { good[events.TopicLPMintRedeem].(*events.LPMintRedeem).LpPool = "" },
		events.TopicNewUsers:         func() { good[events.TopicNewUsers].(*events.NewUser).Name = strings.Repeat("x", 40) },
		events.TopicAccountSnapshots: func() { good[events.TopicAccountSnapshots].(*events.AccountSnapshot).Trading = nil },
	}
	wants := map[string]string{events.TopicIFStakes: "action", events.TopicLPMintRedeem: "lpPool",
		events.TopicNewUsers: "name longer than 32 bytes", events.TopicAccountSnapshots: "trading is required"}
	for topic, rec := range good {
		goodMsg := encode(t, topic, rec)[0]
		bad[topic]()
		invalidJSON, _ := json.Marshal(rec)
		w := s.Kafka.NewWriter(topic)
		err := w.WriteMessages(context.Background(),
			kafkago.Message{Key: goodMsg.Key, Value: []byte(`{"ts":`)},
			kafkago.Message{Key: goodMsg.Key, Value: invalidJSON},
			kafkago.Message{Key: goodMsg.Key, Value: goodMsg.Value, Headers: []kafkago.Header{{Key: "schema-version", Value: []byte("2")}}},
			kafkago.Message{Key: goodMsg.Key, Value: goodMsg.Value},
		)
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		s.WaitConsumed(t, topic)
		reasons := s.DLQReasons(t, topic, 3)
		for _, want := range []string{"unexpected EOF", wants[topic], `unsupported schema-version "2"`} {
			found := false
			for _, r := range reasons {
				found = found || strings.Contains(r, want)
			}
			if !found {
				t.Errorf("%s: no DLQ reason mentions %q: %q", topic, want, reasons)
			}
		}
	}
	final := counts(t, s)
	for _, tb := range []string{"if_stakes", "lp_mint_redeem", "accounts", "snapshots"} {
		if final[tb] != after[tb]+1+map[string]int{"if_stakes": 1}[tb] {
			t.Errorf("%s: %d rows after the malformed messages, want the good one more than %d", tb, final[tb], after[tb])
		}
	}
}

func compareViews(t *testing.T, before, after map[string]string, what string) {
	t.Helper()
	for k := range before {
		if after[k] != before[k] {
			t.Errorf("%s changed %s:\n%s\n%s", what, k, before[k], after[k])
		}
	}
}
