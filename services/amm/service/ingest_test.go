package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/amm"
	"github.com/tidemark/tidemark/services/amm/service"
)

// storedRollup decodes every chunk of the rollup: by symbol and row, the present buckets in order.
func storedRollup(t *testing.T, s *kittest.Stack) map[string]map[amm.Row][]amm.Bucket {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), `SELECT symbol, row, start, chunk FROM amm.rollup ORDER BY symbol, row, start`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[amm.Row][]amm.Bucket{}
	var sym string
	var row int16
	var start int64
	var chunk []byte
	_, err = pgx.ForEachRow(rows, []any{&sym, &row, &start, &chunk}, func() error {
		bs, err := amm.Decode(amm.Row(row), start, chunk)
		if err != nil {
			return err
		}
		if out[sym] == nil {
			out[sym] = map[amm.Row][]amm.Bucket{}
		}
		out[sym][amm.Row(row)] = append(out[sym][amm.Row(row)], bs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fromScratch is what the rollup of states must hold, computed by amm.Rollup's definition.
func fromScratch(states []amm.State) map[string]map[amm.Row][]amm.Bucket {
	out := map[string]map[amm.Row][]amm.Bucket{}
	for sym, last := range amm.Rollup(states) {
		out[sym] = map[amm.Row][]amm.Bucket{}
		for _, st := range last {
			for _, r := range amm.Rows {
				if r != amm.SlotsRow && amm.Series(r-1).PerpOnly() && !st.Perp {
					continue
				}
				out[sym][r] = append(out[sym][r], amm.Bucket{Start: st.Ts / amm.Resolution * amm.Resolution, Values: st.Values(r)})
			}
		}
	}
	return out
}

// rawStates reads the raw states table back.
func rawStates(t *testing.T, s *kittest.Stack) []amm.State {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), `
SELECT ts, slot, symbol, oracle_price, bid_price IS NOT NULL, coalesce(bid_price, 0), coalesce(ask_price, 0),
  coalesce(long_spread, 0), coalesce(short_spread, 0), coalesce(amm_position, 0), coalesce(open_interest, 0)
FROM amm.states`)
	if err != nil {
		t.Fatal(err)
	}
	var out []amm.State
	var st amm.State
	_, err = pgx.ForEachRow(rows, []any{&st.Ts, &st.Slot, &st.Symbol, &st.Oracle, &st.Perp, &st.Bid, &st.Ask,
		&st.LongSpread, &st.ShortSpread, &st.Position, &st.OpenInterest}, func() error {
		out = append(out, st)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameRollup(t *testing.T, what string, got, want map[string]map[amm.Row][]amm.Bucket) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s: the stored rollup differs from the one computed from scratch:\n got %.600s\nwant %.600s", what, g, w)
	}
}

// TestIngestRules: states arrive in batches, out of order, replayed, and the service is stopped with
// its Kafka offsets rewound (a crash between the database commit and the Kafka commit): every state
// is stored once, and the rollup equals a computation from scratch, from the states produced and from
// the raw table. Malformed states go to the DLQ and the partition goes on.
func TestIngestRules(t *testing.T) {
	s := start(t, service.Config{})
	rng := rand.New(rand.NewPCG(7, 9))
	var recs []*events.MarketState
	var states []amm.State
	for _, m := range []kittest.Market{solPerp, btcPerp, solSpot} {
		for i := range 600 {
			// Several states a second, a few seconds apart, over two hours and two chunks.
			ts := hour - 3600 + int64(i)*12 + rng.Int64N(3)
			r := mstate(m, ts, slotAt(ts, i%3), 100+rng.Int64N(100), rng.Int64N(2000)-1000)
			recs = append(recs, r)
			st, err := amm.StateOf(r)
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
		}
	}
	rng.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	msgs := encode(t, recs...)
	s.Ingest(t, msgs[:900]...)
	s.Ingest(t, msgs[600:]...) // a third of them again
	if n := s.Count(t, "amm.states"); n != len(recs) {
		t.Fatalf("%d raw states, want %d", n, len(recs))
	}
	want := fromScratch(states)
	sameRollup(t, "after late and repeated states", storedRollup(t, s), want)

	s.Restart(t, "amm", true)
	s.WaitConsumed(t, events.TopicMarketStates)
	if n := s.Count(t, "amm.states"); n != len(recs) {
		t.Fatalf("%d raw states after the replay, want %d", n, len(recs))
	}
	sameRollup(t, "after the replay", storedRollup(t, s), want)
	sameRollup(t, "against the raw table", storedRollup(t, s), fromScratch(rawStates(t, s)))

	// Malformed: the DLQ gets them with a reason, and the state after them is stored.
	w := s.Kafka.NewWriter(events.TopicMarketStates)
	defer w.Close()
	good := encode(t, mstate(solPerp, hour+30, slotAt(hour+30, 5), 1, 1))[0]
	tooBig := mstate(solPerp, hour+31, slotAt(hour+31, 0), 1, 1)
	tooBig.OraclePrice = "9223372036854775808"
	tooBigJSON, _ := json.Marshal(tooBig)
	noBid := mstate(solPerp, hour+32, slotAt(hour+32, 0), 1, 1)
	noBid.BidPrice = ""
	noBidJSON, _ := json.Marshal(noBid)
	bad := []kafkago.Message{
		{Key: []byte("0"), Value: []byte(`{"ts":`)},
		{Key: []byte("0"), Value: tooBigJSON},
		{Key: []byte("0"), Value: noBidJSON},
		{Key: []byte("0"), Value: good.Value},
	}
	if err := w.WriteMessages(context.Background(), bad...); err != nil {
		t.Fatal(err)
	}
	s.WaitConsumed(t, events.TopicMarketStates)
	if n := s.Count(t, "amm.states"); n != len(recs)+1 {
		t.Fatalf("%d raw states after the malformed messages, want %d", n, len(recs)+1)
	}
	reasons := s.DLQReasons(t, events.TopicMarketStates, 3)
	for _, want := range []string{"unexpected EOF", "oraclePrice", "bidPrice"} {
		if !slices.ContainsFunc(reasons, func(r string) bool { return strings.Contains(r, want) }) {
			t.Errorf("no DLQ reason mentions %q: %q", want, reasons)
		}
	}
}

// TestRetention: the raw states live in daily partitions from now-retention to a week ahead; a state
// older than the retention goes to the rollup only, and the series show it.
func TestRetention(t *testing.T) {
	s := start(t, service.Config{RawRetention: 48 * time.Hour})
	old := now.Add(-72*time.Hour).Unix() / 20 * 20
	recent := now.Add(-time.Hour).Unix() / 20 * 20
	s.Ingest(t, encode(t, mstate(solPerp, old, slotAt(old, 0), 140, 1), mstate(solPerp, recent, slotAt(recent, 0), 160, 2))...)
	if n := s.Count(t, "amm.states"); n != 1 {
		t.Errorf("%d raw states, want the recent one", n)
	}
	a := rows(get(t, s, seriesPath("oraclePrice", "SOL-PERP", old+19, recent+19, 0))) // step 24 s
	if len(a) != 10651 || a[0] != fmt.Sprint(old+19, " 140.000000") || a[len(a)-1] != fmt.Sprint(recent+19, " 160.000000") {
		t.Errorf("%d rows, %q .. %q", len(a), a[0], a[len(a)-1])
	}
	rows, err := s.Pool.Query(context.Background(), `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'amm.states'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 10 || parts[0] != "states_p20261117" || parts[9] != "states_p20261126" {
		t.Errorf("daily partitions %v", parts)
	}
}

// TestConfig: the raw retention is read from TIDEMARK_AMM_RAW_RETENTION and checked.
func TestConfig(t *testing.T) {
	cases := []struct {
		value string
		want  time.Duration
		ok    bool
	}{{"", service.DefaultRawRetention, true}, {"72h", 72 * time.Hour, true}, {"1h", 0, false}, {"soon", 0, false}, {"100000h", 0, false}}
	for _, c := range cases {
		var cfg service.Config
		vars := map[string]string{}
		if c.value != "" {
			vars["TIDEMARK_AMM_RAW_RETENTION"] = c.value
		}
		env := kittest.Env(vars)
		cfg.RegisterEnv(env)
		err := env.Err()
		if err == nil {
			err = cfg.Validate()
		}
		if (err == nil) != c.ok || c.ok && cfg.RawRetention != c.want {
			t.Errorf("%q: %s, %v", c.value, cfg.RawRetention, err)
		}
		if err != nil && !strings.Contains(err.Error(), "TIDEMARK_AMM_RAW_RETENTION") {
			t.Errorf("%q: the error does not name the variable: %v", c.value, err)
		}
	}
}
