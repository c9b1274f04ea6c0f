package service_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
)

// trading is account's trading snapshot of wallet at ts, its balance and realized P&L both v.
func trading(account string, ts, v int64) *events.AccountSnapshot {
	s := snapshotsOf(wallet, account, ts, v)[0].(*events.AccountSnapshot)
	s.Trading.CumulativeRealizedPnl = events.NewAmount(v)
	return s
}

// TestSnapshotSeries checks the series by hand: days=1 is the 24 hours ending with the current one,
// each the latest snapshot of its hour; more days are UTC days, each the latest of its day; a bucket
// without a snapshot is null in its place; every account of the wallet is in every product.
func TestSnapshotSeries(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	hour := now.Unix() - now.Unix()%3600 // 15:00 today
	day := now.Unix() - now.Unix()%86400
	lonely := key(55) // an account known only from its snapshots: a trading one two hours ago, nothing else
	s.Ingest(t, encode(t, events.TopicAccountSnapshots,
		trading(main, hour-5*3600+1800, 5000), // a later snapshot in the hour of 10:00: it wins
		trading(main, hour-5*3600+1799, 4000), // an earlier one in that hour, arriving later: it does not
		trading(lonely, hour-2*3600+10, 7000),
	)...)

	// Hourly: point i is the hour Start + i h; the seed put one snapshot at +60 s in each of the last 30 hours,
	// with balance 1000 + hours back.
	var hourly series
	s.GetJSON(t, "/authority/"+wallet+"/snapshots/trading?days=1", http.StatusOK, &hourly)
	if got := ids(hourly.Accounts); fmt.Sprint(got) != fmt.Sprint([]string{main, sub1, lonely}) {
		t.Fatalf("accounts %v, want main, sub 1, then the one known from snapshots", got)
	}
	start := hour - 23*3600
	for i, p := range hourly.Accounts[0].Snapshots {
		back := int64(23 - i)
		want := strconv.FormatInt(1000+back, 10)
		ts := start + int64(i)*3600 + 60
		if back == 5 {
			want, ts = "5000", hour-5*3600+1800
		}
		if p == nil || p.Ts != ts || p.AccountBalance != want {
			t.Errorf("hour %d of main: %+v, want ts %d balance %s", i, p, ts, want)
		}
	}
	if n := len(hourly.Accounts[0].Snapshots); n != 24 {
		t.Fatalf("%d hourly points", n)
	}
	for i, p := range hourly.Accounts[2].Snapshots {
		if (i == 21) != (p != nil) {
			t.Errorf("hour %d of the lonely account: %+v, want only hour 21", i, p)
		}
	}
	if m := hourly.Accounts[0].Metrics; m == nil || (*m)["cumulativeRealizedPnl"] != "5" {
		t.Errorf("metrics of main: %v, want its latest snapshot's (15:01, realized 5)", m)
	}
	if m := hourly.Accounts[2].Metrics; m == nil || (*m)["cumulativeRealizedPnl"] != "7000" {
		t.Errorf("metrics of the lonely account: %v", m)
	}

	// Daily: yesterday's point is its last snapshot (23:01, 16 hours back), today's the newest (15:01);
	// the days before have none.
	var daily series
	s.GetJSON(t, "/authority/"+wallet+"/snapshots/trading?days=7", http.StatusOK, &daily)
	pts := daily.Accounts[0].Snapshots
	if len(pts) != 7 {
		t.Fatalf("%d daily points", len(pts))
	}
	for i := range 5 {
		if pts[i] != nil {
			t.Errorf("day %d: %+v, want null", i, pts[i])
		}
	}
	if pts[5] == nil || pts[5].Ts != day-3600+60 || pts[5].AccountBalance != "1016" {
		t.Errorf("yesterday: %+v", pts[5])
	}
	if pts[6] == nil || pts[6].Ts != hour+60 || pts[6].AccountBalance != "1000" {
		t.Errorf("today: %+v", pts[6])
	}

	// The overview has every account in every product; vault and earn series have no metrics.
	var over overview
	s.GetJSON(t, "/authority/"+wallet+"/snapshots/overview?days=2", http.StatusOK, &over)
	for name, list := range map[string][]accountSeries{"trade": over.Products.Trade, "earn": over.Products.Earn, "vaults": over.Products.Vaults} {
		if len(list) != 3 || list[0].AccountID != main || len(list[0].Snapshots) != 2 || list[0].Snapshots[1] == nil {
			t.Errorf("%s: %+v", name, list)
		}
		if name != "trade" && list[0].Metrics != nil {
			t.Errorf("%s carries metrics", name)
		}
	}
	if v := over.Products.Vaults[2].Snapshots; v[0] != nil || v[1] != nil {
		t.Errorf("the lonely account has no vault: %+v", v)
	}
	if p := over.Products.Vaults[0].Snapshots[1]; p.Vault != key(92) {
		t.Errorf("vault point %+v", p)
	}

	// Referral snapshots are the wallet's: one a day, counts 1, 2, 3 up to today.
	var refs series
	s.GetJSON(t, "/authority/"+wallet+"/snapshots/referrals?days=3", http.StatusOK, &refs)
	for i, p := range refs.Snapshots {
		if p == nil || p.ReferralCount != strconv.Itoa(i+1) || p.Ts != day-int64(2-i)*86400 {
			t.Errorf("referral day %d: %+v", i, p)
		}
	}
	s.GetJSON(t, "/authority/"+wallet+"/snapshots/referrals?days=1", http.StatusOK, &refs)
	for i, p := range refs.Snapshots {
		if (p != nil) != (start+int64(i)*3600 == day) {
			t.Errorf("referral hour %d: %+v, want only the hour of 00:00", i, p)
		}
	}
}

func ids(list []accountSeries) []string {
	var out []string
	for _, a := range list {
		out = append(out, a.AccountID)
	}
	return out
}
