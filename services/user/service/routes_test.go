package service_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// seed ingests a little of every record the User tag serves for the taker and the maker of
// kittest.Fill, on 2026-11-18 and 2026-11-19.
func seed(t *testing.T, s *kittest.Stack) {
	t.Helper()
	rec := &recorder{}
	seedInto(t, rec)
	s.Ingest(t, rec.msgs...)
}

// seedInto records seed's messages.
func seedInto(t *testing.T, out *recorder) {
	t.Helper()
	day1, day2 := kittest.At("2026-11-18T09:00:00Z"), kittest.At("2026-11-19T09:00:00Z")
	var msgs []events.Message
	msgs = append(msgs, encode(t, events.TopicFills,
		fill(kittest.SOLPerp, day1, 1, events.DirectionLong, 2_000_000_000, 300_000_000),
		fill(kittest.SOLPerp, day2, 2, events.DirectionShort, 1_000_000_000, 151_000_000),
		fill(kittest.BetMkt, day2+60, 3, events.DirectionLong, 1_000_000_000, 620_000),
		fill(kittest.SOLSpot, day2+120, 4, events.DirectionLong, 1_000_000_000, 149_000_000),
	)...)
	msgs = append(msgs, encode(t, events.TopicOrders,
		kittest.Order(kittest.SOLPerp, taker, 10_001, day1-5, events.DirectionLong, 2_000_000_000, 150_000_000, 2_000_000_000, 300_000_000, 105, day1, events.LastActionFilled),
	)...)
	msgs = append(msgs, encode(t, events.TopicOrderActions,
		kittest.OrderAction(kittest.SOLPerp, taker, 10_001, day1-5, events.ActionPlace, events.DirectionLong, 2_000_000_000),
		kittest.OrderAction(kittest.SOLPerp, taker, 10_002, day2-5, events.ActionPlace, events.DirectionShort, 1_000_000_000),
		kittest.OrderAction(kittest.BetMkt, taker, 10_003, day2+55, events.ActionPlace, events.DirectionLong, 1_000_000_000),
		kittest.OrderAction(kittest.SOLSpot, taker, 10_004, day2+100, events.ActionPlace, events.DirectionLong, 1_000_000_000),
	)...)
	sw := kittest.Swap(kittest.USDC, kittest.SOLSpot, day2, 1)
	sw.User = taker
	msgs = append(msgs, encode(t, events.TopicSwaps, sw)...)
	for _, a := range []string{taker, maker} {
		d, r := kittest.Deposit(kittest.USDC, day2, 1, false), kittest.Deposit(kittest.USDC, day2+5, 2, true)
		d.User, r.User = a, a
		msgs = append(msgs, encode(t, events.TopicDeposits, d, r)...)
		msgs = append(msgs, encode(t, events.TopicSettlePnl, kittest.SettlePnl(kittest.SOLPerp, a, day2, 1))...)
		msgs = append(msgs, encode(t, events.TopicFundingPayments, kittest.FundingPayment(kittest.SOLPerp, a, day2, 1, -1500))...)
		msgs = append(msgs, encode(t, events.TopicLiquidations, kittest.Liquidation(kittest.SOLPerp, a, day2, 1))...)
		msgs = append(msgs, encode(t, events.TopicLP, kittest.PerpLP(kittest.SOLPerp, a, day2, 1))...)
		for h := int64(0); h < 30; h++ {
			ts := kittest.DefaultNow.Unix() - kittest.DefaultNow.Unix()%3600 - h*3600 + 60
			msgs = append(msgs, encode(t, events.TopicAccountSnapshots,
				kittest.TradingSnapshot(a, ts, 1000+h), kittest.EarnSnapshot(a, ts), kittest.VaultSnapshot(a, ts))...)
		}
	}
	out.msgs = msgs
}

// userValues are candidate values of the User operations' path parameters, for the data of seed.
var userValues = map[string][]string{
	"accountId":    {taker, maker},
	"symbol":       {"SOL-PERP", "TRUMP-WIN-2028-BET", "SOL", "USDC"},
	"year":         {"2026"},
	"month":        {"11"},
	"marketFilter": {"perp", "prediction", "spot"},
	"orderId":      {"10001", "10002", "20001"},
}

// TestEveryOperationOfTheDocument walks every User operation of api/openapi.yaml with the seeded data
// and validates every answer, then sends hostile values to all of them: no answer may be a server
// error.
func TestEveryOperationOfTheDocument(t *testing.T) {
	s := start(t)
	seed(t, s)
	s.CheckContract(t, userValues, 3000, "/user/")
}

// TestLimitsAndErrors checks every refusal of the User routes, and that an account nothing happened
// to is an empty list, not an error.
func TestLimitsAndErrors(t *testing.T) {
	s := start(t)
	seed(t, s)
	nobody := kittest.Key(77)
	s.CheckRefusals(t, []kittest.Refusal{
		{Path: "/user/not-a-key/trades", Status: 400, Message: "accountId must be a subaccount's public key"},
		{Path: "/user/" + strings.Repeat("1", 45) + "/trades", Status: 400, Message: "accountId"},
		{Path: "/user/Acct0000000000000000000000000000000000000000/swaps/2026/11", Status: 400, Message: "accountId"},
		{Path: "/user/" + taker + "/trades/DOGE-PERP", Status: 404, Message: "market DOGE-PERP not found"},
		{Path: "/user/" + taker + "/predictions/SOL-PERP", Status: 404, Message: "SOL-PERP is not a prediction market"},
		{Path: "/user/" + taker + "/trades/2027/01", Status: 400, Message: "2027-01 is in the future"},
		{Path: "/user/" + taker + "/trades/2021/12", Status: 400, Message: "year must be an integer >= 2022"},
		{Path: "/user/" + taker + "/trades/2026/13", Status: 400, Message: "month must be an integer between 1 and 12"},
		{Path: "/user/" + taker + "/trades/2026/11?page=0", Status: 400, Message: "page must be an integer"},
		{Path: "/user/" + taker + "/trades/2026/11?format=xml", Status: 400, Message: "format must be one of json, csv"},
		{Path: "/user/" + taker + "/trades?page=bogus", Status: 400, Message: "Invalid page token"},
		{Path: "/user/" + taker + "/orders/futures", Status: 400, Message: "marketFilter must be one of perp, spot, prediction"},
		{Path: "/user/" + taker + "/orders/perp?startTs=10&endTs=5", Status: 400, Message: "startTs must not be after endTs"},
		{Path: "/user/" + taker + "/orders/perp?hasFill=maybe", Status: 400, Message: "hasFill must be true or false"},
		{Path: "/user/" + taker + "/orders/perp?startTs=-1", Status: 400, Message: "startTs must be an integer"},
		{Path: "/user/" + taker + "/orders/spot/SOL-PERP", Status: 404, Message: "SOL-PERP is not a spot market"},
		{Path: "/user/" + taker + "/orders/id/12a", Status: 400, Message: "orderId must be an unsigned integer"},
		{Path: "/user/" + taker + "/orders/id/999", Status: 404, Message: "has no order 999"},
		{Path: "/user/" + taker + "/orders/x1/actions", Status: 400, Message: "orderId must be an unsigned integer"},
		{Path: "/user/" + taker + "/snapshots/trading?days=0", Status: 400, Message: "days must be an integer between 1 and 100"},
		{Path: "/user/" + taker + "/snapshots/earn?days=101", Status: 400, Message: "days must be an integer between 1 and 100"},
	})
	// An account nothing happened to: empty lists and a series of nulls.
	for _, p := range []string{"/trades", "/trades/2026/11", "/orders/perp", "/orders/1/actions", "/positions", "/swaps"} {
		if l := getList(t, s, "/user/"+nobody+p); len(l.Records) != 0 {
			t.Errorf("%s of an unknown account: %d records", p, len(l.Records))
		}
	}
	var snaps struct {
		Snapshots []any `json:"snapshots"`
		Metrics   any   `json:"metrics"`
	}
	s.GetJSON(t, "/user/"+nobody+"/snapshots/trading?days=3", http.StatusOK, &snaps)
	if len(snaps.Snapshots) != 3 || snaps.Snapshots[0] != nil || snaps.Metrics != nil {
		t.Errorf("snapshots of an unknown account: %+v", snaps)
	}
}

// TestSnapshotSeries: days=1 is 24 hourly points ending with the current hour, more is one point per
// day ending today, each the latest snapshot of its bucket, null where there is none.
func TestSnapshotSeries(t *testing.T) {
	s := start(t)
	hour := kittest.DefaultNow.Unix() - kittest.DefaultNow.Unix()%3600
	var msgs []events.Message
	// Two snapshots in the current hour (the later one counts), none two hours ago, one 30 hours ago.
	for _, sn := range []struct{ ts, balance int64 }{{hour + 10, 1}, {hour + 20, 2}, {hour - 3600 + 5, 3}, {hour - 30*3600, 4}} {
		msgs = append(msgs, encode(t, events.TopicAccountSnapshots, kittest.TradingSnapshot(taker, sn.ts, sn.balance))...)
	}
	s.Ingest(t, msgs...)
	type entry struct {
		Ts             int64  `json:"ts"`
		AccountBalance string `json:"accountBalance"`
	}
	var day struct {
		Snapshots []*entry `json:"snapshots"`
		Metrics   *struct {
			CumulativeTakerVolume string `json:"cumulativeTakerVolume"`
		} `json:"metrics"`
	}
	s.GetJSON(t, "/user/"+taker+"/snapshots/trading?days=1", http.StatusOK, &day)
	if len(day.Snapshots) != 24 || day.Snapshots[23] == nil || day.Snapshots[23].AccountBalance != "2" ||
		day.Snapshots[22] == nil || day.Snapshots[22].AccountBalance != "3" || day.Snapshots[21] != nil || day.Metrics == nil ||
		day.Metrics.CumulativeTakerVolume != "1000" {
		t.Fatalf("hourly series: %d points, last %+v, metrics %+v", len(day.Snapshots), day.Snapshots[23], day.Metrics)
	}
	var week struct {
		Snapshots []*entry `json:"snapshots"`
	}
	s.GetJSON(t, "/user/"+taker+"/snapshots/trading?days=3", http.StatusOK, &week)
	// 30 hours ago is yesterday at 09:30: the day's latest (and only) snapshot.
	if len(week.Snapshots) != 3 || week.Snapshots[0] != nil || week.Snapshots[1] == nil || week.Snapshots[1].AccountBalance != "4" ||
		week.Snapshots[2] == nil || week.Snapshots[2].AccountBalance != "2" {
		t.Fatalf("daily series: %+v", week.Snapshots)
	}
}

// TestPagingAndDatedTotals walks the rolling pages of an account's trades and the dated month, JSON
// and CSV: every record once, newest first or oldest first, the totals right.
func TestPagingAndDatedTotals(t *testing.T) {
	s := start(t)
	var recs []events.Record
	start := kittest.At("2026-11-02T00:00:00Z")
	for i := range 45 {
		recs = append(recs, fill(kittest.SOLPerp, start+int64(i)*3600, i+1, events.DirectionLong, 1_000_000_000, 150_000_000))
	}
	// Another account's fill, which must not leak in.
	other := fill(kittest.SOLPerp, start, 99, events.DirectionLong, 1_000_000_000, 150_000_000)
	other.Taker, other.Maker = kittest.Key(40), kittest.Key(41)
	recs = append(recs, other)
	s.Ingest(t, encode(t, events.TopicFills, recs...)...)

	seen := map[string]bool{}
	path := "/user/" + taker + "/trades"
	var lastTs int64 = 1 << 62
	for pages := 0; ; pages++ {
		l := getList(t, s, path)
		for _, f := range kittest.Records[events.Fill](t, l.Records) {
			if f.User != taker || f.Ts > lastTs || seen[f.TxSig] {
				t.Fatalf("page %d: %s of %s at %d after %d", pages, f.TxSig, f.User, f.Ts, lastTs)
			}
			seen[f.TxSig], lastTs = true, f.Ts
		}
		tok, _ := l.Meta.NextPage.(string)
		if tok == "" {
			break
		}
		path = "/user/" + taker + "/trades?page=" + tok
	}
	if len(seen) != 45 {
		t.Fatalf("%d fills walked, want 45", len(seen))
	}
	for page, want := range []int{20, 20, 5} {
		l := getList(t, s, fmt.Sprintf("/user/%s/trades/2026/11?page=%d", maker, page+1))
		if len(l.Records) != want || l.Meta.TotalRecords != 45 || l.Meta.TotalPages != 3 {
			t.Fatalf("dated page %d: %d records, meta %+v", page+1, len(l.Records), l.Meta)
		}
	}
	rec := s.Get(t, "/user/"+maker+"/trades/2026/11?page=3&format=csv")
	lines := strings.Split(strings.TrimSuffix(rec.Body.String(), "\n"), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], `"ts","txSig","txSigIndex","slot"`) || !strings.Contains(lines[5], maker) {
		t.Fatalf("CSV page: %q", rec.Body.String())
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="user-`+maker+`-trades-2026-11.csv"` {
		t.Fatalf("Content-Disposition %q", cd)
	}
	_ = strconv.Itoa
}
