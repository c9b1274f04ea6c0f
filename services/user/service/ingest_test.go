package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/user/postgres"
)

// tables are every table of the user schema holding what was ingested.
var tables = []string{"fills", "order_actions", "orders", "swaps", "deposits", "settle_pnl", "funding_payments", "lp",
	"liquidations", "snapshots", "position_state", "markets"}

func counts(t *testing.T, s *kittest.Stack) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tb := range tables {
		out[tb] = s.Count(t, "users."+tb)
	}
	return out
}

// views are what the API answers about the seeded accounts, for comparing before and after.
func views(t *testing.T, s *kittest.Stack) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, a := range []string{taker, maker} {
		for _, p := range []string{"/trades", "/positions", "/orders/perp", "/orders/id/10001", "/orders/10001/actions",
			"/deposits/2026/11", "/snapshots/trading?days=2", "/fundingPayments"} {
			rec := s.Get(t, "/user/"+a+p)
			out[a+p] = rec.Body.String()
		}
	}
	return out
}

// TestIngestRules: messages consumed again change nothing (replayed by a producer twice, or handed
// again after a crash between the database and the Kafka commits), and malformed ones go to the DLQ
// while the partition moves on.
func TestIngestRules(t *testing.T) {
	s := start(t)
	seedMsgs := seedMessages(t)
	s.Ingest(t, seedMsgs...)
	before, seen := counts(t, s), views(t, s)
	if before["fills"] == 0 || before["position_state"] == 0 || before["orders"] == 0 {
		t.Fatalf("seed stored too little: %v", before)
	}

	// A producer sends everything again, twice.
	s.Ingest(t, seedMsgs...)
	s.Ingest(t, seedMsgs...)
	if after := counts(t, s); !reflect.DeepEqual(after, before) {
		t.Fatalf("replays changed the tables:\n before %v\n after  %v", before, after)
	}
	if after := views(t, s); !reflect.DeepEqual(after, seen) {
		for k := range seen {
			if after[k] != seen[k] {
				t.Errorf("replays changed %s:\n%s\n%s", k, seen[k], after[k])
			}
		}
		t.FailNow()
	}

	// Every message delivered again, as by an indexer that reads blocks again after a crash: the
	// consumer reads every topic from the start.
	s.Restart(t, "user", true)
	late := fill(kittest.SOLPerp, kittest.At("2026-11-19T12:00:00Z"), 50, events.DirectionShort, 1_000_000_000, 150_000_000)
	s.Ingest(t, encode(t, events.TopicFills, late)...)
	after := counts(t, s)
	if after["fills"] != before["fills"]+2 {
		t.Fatalf("after the crash: %d fill rows, want %d", after["fills"], before["fills"]+2)
	}
	s.WaitConsumed(t, s.Instance(t, "user").Consumes()...)
	if after := counts(t, s); after["fills"] != before["fills"]+2 {
		t.Fatalf("after the replay: %d fill rows, want %d", after["fills"], before["fills"]+2)
	}

	// Malformed messages: the DLQ gets them with a reason, and the fill after them is stored.
	w := s.Kafka.NewWriter(events.TopicFills)
	defer w.Close()
	good := fill(kittest.SOLPerp, kittest.At("2026-11-19T13:00:00Z"), 51, events.DirectionLong, 1_000_000_000, 150_000_000)
	goodMsg := encode(t, events.TopicFills, good)[0]
	invalid := fill(kittest.SOLPerp, 1, 52, events.DirectionLong, 1_000_000_000, 150_000_000)
	invalidJSON, _ := json.Marshal(invalid)
	bad := []kafkago.Message{
		{Key: []byte("0"), Value: []byte(`{"ts":`)},
		{Key: []byte("0"), Value: invalidJSON},
		{Key: []byte("0"), Value: goodMsg.Value, Headers: []kafkago.Header{{Key: "schema-version", Value: []byte("2")}}},
		{Key: []byte("0"), Value: goodMsg.Value},
	}
	if err := w.WriteMessages(context.Background(), bad...); err != nil {
		t.Fatal(err)
	}
	s.WaitConsumed(t, events.TopicFills)
	if n := s.Count(t, "users.fills"); n != after["fills"]+2 {
		t.Fatalf("%d fill rows after the malformed messages, want %d", n, after["fills"]+2)
	}
	reasons := s.DLQReasons(t, events.TopicFills, 3)
	for _, want := range []string{"unexpected EOF", "ts 1 outside", `unsupported schema-version "2"`} {
		found := false
		for _, r := range reasons {
			found = found || strings.Contains(r, want)
		}
		if !found {
			t.Errorf("no DLQ reason mentions %q: %q", want, reasons)
		}
	}
}

// seedMessages are seed's messages.
func seedMessages(t *testing.T) []events.Message {
	t.Helper()
	var msgs []events.Message
	rec := &recorder{}
	seedInto(t, rec)
	msgs = append(msgs, rec.msgs...)
	return msgs
}

type recorder struct{ msgs []events.Message }

// TestOrdersFoldedFromOutOfOrderAndReplayedActions delivers an order's fills, actions and record out
// of order, in several batches and some twice: the order ends as its newest event says.
func TestOrdersFoldedFromOutOfOrderAndReplayedActions(t *testing.T) {
	s := start(t)
	t0 := kittest.At("2026-11-19T10:00:00Z")
	fillOf := func(id int, ts int64, cumBase, cumQuote int64) *events.Fill {
		f := fill(kittest.SOLPerp, ts, id, events.DirectionLong, 1_000_000_000, 150_000_000)
		f.TakerOrderID, f.TakerOrderBaseAssetAmount = "500", "3000000000"
		f.TakerOrderCumulativeBaseAssetAmountFilled, f.TakerOrderCumulativeQuoteAssetAmountFilled = events.NewAmount(cumBase), events.NewAmount(cumQuote)
		return f
	}
	f1, f2 := fillOf(1, t0+10, 1_000_000_000, 150_000_000), fillOf(2, t0+20, 2_000_000_000, 300_000_000)
	place := kittest.OrderAction(kittest.SOLPerp, taker, 500, t0, events.ActionPlace, events.DirectionLong, 3_000_000_000)
	cancel := kittest.OrderAction(kittest.SOLPerp, taker, 500, t0+30, events.ActionCancel, events.DirectionLong, 3_000_000_000)
	record := kittest.Order(kittest.SOLPerp, taker, 500, t0, events.DirectionLong, 3_000_000_000, 150_000_000, 2_000_000_000, 300_000_000,
		105_000, t0+20, events.LastActionPartialFill)
	for _, batch := range [][]events.Message{
		encode(t, events.TopicFills, f2),
		encode(t, events.TopicOrderActions, cancel),
		encode(t, events.TopicOrderActions, place),
		encode(t, events.TopicFills, f1),
		encode(t, events.TopicOrders, record),
		encode(t, events.TopicFills, f1, f2),
		encode(t, events.TopicOrderActions, cancel, place),
	} {
		s.Ingest(t, batch...)
	}
	var got struct {
		Record events.Order `json:"record"`
	}
	s.GetJSON(t, "/user/"+taker+"/orders/id/500", http.StatusOK, &got)
	o := got.Record
	fee := events.NewAmount(2 * 150_000_000 * 35 / 100_000)
	if o.Status != events.OrderStatusCanceled || o.LastActionStatus != events.LastActionPartialFillCancelled || o.LastUpdatedTs != t0+30 ||
		o.BaseAssetAmountFilled != "2000000000" || o.QuoteAssetAmountFilled != "300000000" || o.CumulativeFee != fee ||
		o.OrderType != events.OrderTypeLimit || o.Ts != t0 {
		t.Fatalf("folded order %+v", o)
	}
	if l := getList(t, s, "/user/"+taker+"/orders/perp?hasFill=true"); len(l.Records) != 1 {
		t.Fatalf("hasFill=true: %d orders", len(l.Records))
	}
	if l := getList(t, s, "/user/"+taker+"/orders/perp?hasFill=false"); len(l.Records) != 0 {
		t.Fatalf("hasFill=false: %d orders", len(l.Records))
	}
	acts := kittest.Records[events.OrderAction](t, getList(t, s, "/user/"+taker+"/orders/500/actions").Records)
	var kinds []string
	for _, a := range acts {
		kinds = append(kinds, a.Action)
	}
	if strings.Join(kinds, ",") != "cancel,fill,fill,place" {
		t.Fatalf("actions newest first: %v", kinds)
	}
}

// TestARetriedBatchMovesPositions: the consumer writes a batch again, with the same decoded records,
// when its transaction fails (a deadlock, Postgres restarting). What the first attempt did was rolled
// back, so the second must move the positions again rather than take them for done.
func TestARetriedBatchMovesPositions(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	var sink ingest.Sink
	for _, k := range postgres.NewIngest("users").Sinks() {
		if k.Topic() == events.TopicFills {
			sink = k
		}
	}
	var recs []any
	for i, f := range []*events.Fill{
		fill(kittest.SOLPerp, kittest.At("2026-11-19T10:00:00Z"), 1, events.DirectionLong, 2_000_000_000, 300_000_000),
		fill(kittest.SOLPerp, kittest.At("2026-11-19T10:01:00Z"), 2, events.DirectionShort, 1_000_000_000, 160_000_000),
	} {
		m := encode(t, events.TopicFills, f)[0]
		rec, err := sink.Decode(ingest.Message{Topic: m.Topic, Key: m.Key, Value: m.Value})
		if err != nil {
			t.Fatalf("fill %d: %v", i, err)
		}
		recs = append(recs, rec)
	}
	write := func(commit bool) {
		t.Helper()
		tx, err := s.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if err := sink.Write(ctx, tx, recs); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(false) // the attempt that failed: rolled back
	write(true)
	var base string
	if err := s.Pool.QueryRow(ctx, `SELECT base::text FROM users.position_state WHERE account = $1 AND symbol = 'SOL-PERP'`,
		taker).Scan(&base); err != nil {
		t.Fatalf("the taker's position after the retry: %v", err)
	}
	if base != "1000000000" {
		t.Fatalf("the taker's base %s, want 1000000000 (long 2, then short 1)", base)
	}
	var closed int
	if err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM users.fills WHERE account = $1 AND position IS NOT NULL`, taker).Scan(&closed); err != nil || closed != 1 {
		t.Fatalf("%d closed positions of the taker (%v), want 1", closed, err)
	}
}
