package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/services/market"
)

func httpRecorder(s *stack, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func candles(t *testing.T, s *stack, path string) []market.Candle {
	t.Helper()
	var body struct {
		Success bool            `json:"success"`
		Records []market.Candle `json:"records"`
	}
	s.getJSON(t, path, http.StatusOK, &body)
	return body.Records
}

// c is a candle written out by hand: open, high, low, close of fills and oracle, and volumes.
func c(ts int64, fo, fh, fl, fc, oo, oh, ol, oc, qv, bv float64) market.Candle {
	return market.Candle{Ts: ts, FillOpen: fo, FillHigh: fh, FillLow: fl, FillClose: fc,
		OracleOpen: oo, OracleHigh: oh, OracleLow: ol, OracleClose: oc, QuoteVolume: qv, BaseVolume: bv}
}

// TestCandlesComputedByHand ingests a known fill sequence, delivered in two batches out of order, and
// compares every resolution with candles computed by hand, empty buckets included.
func TestCandlesComputedByHand(t *testing.T) {
	s := startStack(t)
	// Prices: quote (1e6) / base (1e9) * 1e3. Oracle in 1e6.
	t0 := at("2026-10-30T23:58:10Z") // a Friday, two days before November
	fills := []*events.Fill{
		fill(solPerp, t0, 1, 150_000_000, 1_000_000_000, 149_500_000),                         // 23:58:10 price 150.0 oracle 149.5, 1 SOL
		fill(solPerp, t0+20, 2, 303_000_000, 2_000_000_000, 151_000_000),                      // 23:58:30 151.5, oracle 151.0, 2 SOL
		fill(solPerp, t0+40, 3, 74_500_000, 500_000_000, 149_000_000),                         // 23:58:50 149.0, oracle 149.0, 0.5 SOL
		fill(solPerp, t0+170, 4, 152_000_000, 1_000_000_000, 152_000_000),                     // 2026-10-31 00:01:00, 152.0 (empty minute 23:59 and 00:00 before)
		fill(solPerp, at("2026-11-02T10:00:00Z"), 5, 310_000_000, 2_000_000_000, 154_000_000), // Monday: new week and month, 155.0
	}
	// The later fills first: the candles must not depend on arrival order.
	s.ingest(t, encode(t, events.TopicFills, fills[3], fills[4])...)
	s.ingest(t, encode(t, events.TopicFills, fills[0], fills[1], fills[2])...)

	m1 := at("2026-10-30T23:58:00Z")
	got := candles(t, s, fmt.Sprintf("/market/SOL-PERP/candles/1?startTs=%d&endTs=%d", m1, m1+4*60))
	want := []market.Candle{
		c(m1, 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
		c(m1+60, 149, 149, 149, 149, 149, 149, 149, 149, 0, 0),
		c(m1+120, 149, 149, 149, 149, 149, 149, 149, 149, 0, 0),
		c(m1+180, 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
		c(m1+240, 152, 152, 152, 152, 152, 152, 152, 152, 0, 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("1-minute candles:\n got %+v\nwant %+v", got, want)
	}

	// The same range read backwards (startTs after endTs), as the protocol's API is called, with limit.
	back := candles(t, s, fmt.Sprintf("/market/SOL-PERP/candles/1?startTs=%d&endTs=%d&limit=2", m1+4*60, m1))
	if !reflect.DeepEqual(back, []market.Candle{want[4], want[3]}) {
		t.Fatalf("backwards candles %+v", back)
	}

	h4 := at("2026-10-30T20:00:00Z")
	day := at("2026-10-30T00:00:00Z")
	week := at("2026-10-26T00:00:00Z") // Monday
	month := at("2026-10-01T00:00:00Z")
	cases := []struct {
		res  string
		from int64
		want []market.Candle
	}{
		{"5", at("2026-10-30T23:55:00Z"), []market.Candle{
			c(at("2026-10-30T23:55:00Z"), 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
			c(at("2026-10-31T00:00:00Z"), 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
		}},
		{"15", at("2026-10-30T23:45:00Z"), []market.Candle{
			c(at("2026-10-30T23:45:00Z"), 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
			c(at("2026-10-31T00:00:00Z"), 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
		}},
		{"60", at("2026-10-30T23:00:00Z"), []market.Candle{
			c(at("2026-10-30T23:00:00Z"), 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
			c(at("2026-10-31T00:00:00Z"), 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
		}},
		{"240", h4, []market.Candle{
			c(h4, 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
			c(h4+4*3600, 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
		}},
		{"D", day, []market.Candle{
			c(day, 150, 151.5, 149, 149, 149.5, 151, 149, 149, 527.5, 3.5),
			c(day+86400, 149, 152, 149, 152, 149, 152, 149, 152, 152, 1),
			c(day+2*86400, 152, 152, 152, 152, 152, 152, 152, 152, 0, 0), // Sunday: no trades
			c(day+3*86400, 152, 155, 152, 155, 152, 154, 152, 154, 310, 2),
		}},
		{"W", week, []market.Candle{
			c(week, 150, 152, 149, 152, 149.5, 152, 149, 152, 679.5, 4.5),
			c(week+7*86400, 152, 155, 152, 155, 152, 154, 152, 154, 310, 2),
		}},
		{"M", month, []market.Candle{
			c(month, 150, 152, 149, 152, 149.5, 152, 149, 152, 679.5, 4.5),
			c(at("2026-11-01T00:00:00Z"), 152, 155, 152, 155, 152, 154, 152, 154, 310, 2),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.res, func(t *testing.T) {
			last := tc.want[len(tc.want)-1].Ts
			got := candles(t, s, fmt.Sprintf("/market/SOL-PERP/candles/%s?startTs=%d&endTs=%d", tc.res, tc.from, last))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}

	// Replaying the same fills changes nothing: candles count each fill once.
	s.produce(t, encode(t, events.TopicFills, fills[0], fills[1], fills[2], fills[3], fills[4])...)
	// A marker with the same key (marketIndex 0) lands in the same partition after the replay, so once
	// it is stored the replay has been consumed. It is a USDC fill: SOL-PERP candles stay as they were.
	marker := fill(usdc, t0, 99, 1_000_000, 1_000_000_000, 1_000_000)
	s.ingest(t, encode(t, events.TopicFills, marker)...)
	// limit=999: a window no earlier request asked for.
	if again := candles(t, s, "/market/SOL-PERP/candles/M?limit=999&startTs="+fmt.Sprint(month)+"&endTs="+fmt.Sprint(at("2026-11-01T00:00:00Z"))); !reflect.DeepEqual(again, cases[len(cases)-1].want) {
		t.Fatalf("after replay: %+v", again)
	}
	if n := s.count(t, "fills"); n != 6 {
		t.Fatalf("%d fills stored after replay, want 6", n)
	}
}

// TestCandleChangesArePublishedAfterCommit reads edge.candles: a recent fill yields one message per
// resolution with the candle as stored and the fill that moved it, numbered in its channel: the
// create is 1 and the update after it 2, the numbers the internal snapshot then gives each channel.
func TestCandleChangesArePublishedAfterCommit(t *testing.T) {
	s := startStack(t)
	ts := now.Unix() - 30
	s.ingest(t, encode(t, events.TopicFills, fill(solPerp, ts, 7, 300_000_000, 2_000_000_000, 150_000_000))...)
	// History outside the edge window is not published.
	s.ingest(t, encode(t, events.TopicFills, fill(solPerp, ts-86400, 6, 300_000_000, 2_000_000_000, 150_000_000))...)
	// A second fill in the same buckets updates each candle.
	s.ingest(t, encode(t, events.TopicFills, fill(solPerp, ts+1, 8, 151_000_000, 1_000_000_000, 151_000_000))...)

	const want = 16
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var msgs []market.EdgeCandleMessage
	var channels, seqs []string
	// Every message is keyed SOL-PERP, so all sit in one partition; which one is the hash's business.
	for p := 0; p < 3 && len(msgs) < want; p++ {
		pr := kafkago.NewReader(kafkago.ReaderConfig{Brokers: s.Kafka.Brokers, Topic: events.TopicEdgeCandles, Partition: p, MaxWait: 100 * time.Millisecond})
		for len(msgs) < want {
			pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
			m, err := pr.ReadMessage(pctx)
			pcancel()
			if err != nil {
				break
			}
			var em market.EdgeCandleMessage
			if err := json.Unmarshal(m.Value, &em); err != nil {
				t.Fatalf("edge message %s: %v", m.Value, err)
			}
			if string(m.Key) != "SOL-PERP" {
				t.Fatalf("edge message key %q", m.Key)
			}
			c, _ := kafka.Header(m, events.HeaderEdgeChannel)
			n, _ := kafka.Header(m, events.HeaderEdgeSeq)
			msgs, channels, seqs = append(msgs, em), append(channels, c), append(seqs, n)
		}
		pr.Close()
	}
	if len(msgs) != want {
		t.Fatalf("%d candle messages, want two per resolution", len(msgs))
	}
	for i, m := range msgs {
		wantType, wantID, wantSeq := "create", "7", "1"
		if i >= want/2 {
			wantType, wantID, wantSeq = "update", "8", "2"
		}
		if m.Type != wantType || m.Symbol != "SOL-PERP" || len(m.Trades) != 1 || m.Trades[0].FillRecordID != wantID ||
			m.Candle.LastFillRecordID == nil || *m.Candle.LastFillRecordID != wantID {
			t.Fatalf("edge message %d: %+v", i, m)
		}
		if i < want/2 && (m.Candle.FillClose != 150 || m.Candle.QuoteVolume != 300 || m.Candle.BaseVolume != 2) {
			t.Fatalf("edge message %d: %+v", i, m)
		}
		if channels[i] != events.CandleChannel("SOL-PERP", m.Resolution) || seqs[i] != wantSeq {
			t.Errorf("edge message %d (%s %s): channel %q seq %q, want seq %s", i, m.Type, m.Resolution, channels[i], seqs[i], wantSeq)
		}
	}

	// The snapshot is current to the last message of each channel.
	snap := edgeSnapshot(t, s, "?symbol=SOL-PERP")
	if len(snap.Data) != len(market.Resolutions()) {
		t.Fatalf("snapshot of SOL-PERP: %d candles", len(snap.Data))
	}
	for _, r := range market.Resolutions() {
		if c := events.CandleChannel("SOL-PERP", string(r)); snap.Seqs[c] != 2 {
			t.Errorf("snapshot seq of %s = %d, want 2 (%v)", c, snap.Seqs[c], snap.Seqs)
		}
	}
	if other := edgeSnapshot(t, s, "?symbol=BTC-PERP"); len(other.Data) != 0 || len(other.Seqs) != 0 {
		t.Errorf("snapshot of a market without fills: %+v", other)
	}
}
