package simchain_test

import (
	"encoding"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/tools/sim"
)

// TestSimulatorRoundTrip drives the simulator over twenty minutes across an hour (so hourly funding
// and insurance records are in) and sends every record of the mapped topics through its event's
// bytes and back.
func TestSimulatorRoundTrip(t *testing.T) {
	topics := map[string]int{
		events.TopicFills: 0, events.TopicOrderActions: 0, events.TopicOrders: 0, events.TopicFundingRates: 0,
		events.TopicFundingPayments: 0, events.TopicLiquidations: 0, events.TopicDeposits: 0, events.TopicSwaps: 0,
		events.TopicSettlePnl: 0, events.TopicLP: 0, events.TopicInsuranceFund: 0, events.TopicIFStakes: 0,
		events.TopicLPMintRedeem: 0, events.TopicNewUsers: 0,
	}
	cat, err := records.CatalogueOf(sim.Markets()...)
	if err != nil {
		t.Fatal(err)
	}
	m := records.New(cat)
	s := sim.New(sim.Config{Seed: 7, Authorities: 40, FillsPerMinute: 300})
	from := sim.Epoch().Add(50*time.Hour + 50*time.Minute)
	err = s.Generate(from, from.Add(20*time.Minute), func(msg events.Message) error {
		if _, ok := topics[msg.Topic]; !ok {
			return nil
		}
		topics[msg.Topic]++
		rec, err := events.Decode(msg.Topic, msg.Value)
		if err != nil {
			t.Fatalf("%s: %v", msg.Topic, err)
		}
		ev, err := records.Event(rec)
		if err != nil {
			t.Fatalf("%s: %v", msg.Topic, err)
		}
		b, err := ev.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", msg.Topic, err)
		}
		decoded, err := drift.DecodeEvent(b)
		if err != nil {
			t.Fatalf("%s: %v", msg.Topic, err)
		}
		tx := reflect.ValueOf(rec).Elem().FieldByName("Tx").Interface().(events.Tx)
		got, ok, err := m.Map(decoded, records.ContextOf(tx))
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", msg.Topic, ok, err)
		}
		if nu, ok := got.Record.(*events.NewUser); ok {
			if err := newUserAccounts(t, rec.(*events.NewUser)).Apply(nu); err != nil {
				t.Fatal(err)
			}
		}
		if got.Topic != msg.Topic {
			t.Errorf("%s record came back for %s", msg.Topic, got.Topic)
		}
		if err := got.Record.Validate(); err != nil {
			t.Errorf("%s: %v", msg.Topic, err)
		}
		want, gotJSON := mustJSON(t, rec), mustJSON(t, got.Record)
		if want != gotJSON {
			t.Errorf("%s\ngot  %s\nwant %s", msg.Topic, gotJSON, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for topic, n := range topics {
		if n == 0 {
			t.Errorf("no %s record in the window", topic)
		}
	}
	t.Logf("records per topic: %v", topics)
}

// newUserAccounts are the accounts behind a new user record, through their bytes.
func newUserAccounts(tb testing.TB, r *events.NewUser) records.NewUserAccounts {
	tb.Helper()
	var a records.NewUserAccounts
	u, err := records.UserAccount(r)
	if err != nil {
		tb.Fatal(err)
	}
	a.User = new(drift.User)
	reencode(tb, u, a.User)
	if b := r.BuilderRevenueShareAccount; b != nil {
		s, err := records.RevenueShareAccount(r.UserAuthority, b)
		if err != nil {
			tb.Fatal(err)
		}
		a.RevenueShare = new(records.RevenueShare)
		reencode(tb, s, a.RevenueShare)
	}
	if x := r.RevenueShareEscrow; x != nil {
		e, err := records.RevenueShareEscrowAccount(r.UserAuthority, x)
		if err != nil {
			tb.Fatal(err)
		}
		a.RevenueShareEscrow = new(records.RevenueShareEscrow)
		reencode(tb, e, a.RevenueShareEscrow)
	}
	return a
}

func reencode(tb testing.TB, from encoding.BinaryMarshaler, to encoding.BinaryUnmarshaler) {
	tb.Helper()
	b, err := from.MarshalBinary()
	if err != nil {
		tb.Fatal(err)
	}
	if err := to.UnmarshalBinary(b); err != nil {
		tb.Fatal(err)
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
