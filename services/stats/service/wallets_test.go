package service_test

import (
	"math/rand/v2"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/stats"
	"github.com/tidemark/tidemark/services/stats/service"
)

func standing(t *testing.T, s *kittest.Stack, authority, query string) stats.Standing {
	t.Helper()
	var st struct{ Data stats.Standing }
	s.GetJSON(t, "/stats/leaderboard/"+authority+query, http.StatusOK, &st)
	return st.Data
}

// TestFillBeforeItsWallet: a fill of an account whose new-user record has not arrived waits, and
// counts for the wallet once the record comes; either delivered again changes nothing.
func TestFillBeforeItsWallet(t *testing.T) {
	s := start(t)
	wallet, account, other := kittest.Key(401), kittest.Key(402), kittest.Key(403)
	f := fill(kittest.SOLPerp, nowS-hour, 1, account, other, 1_000_000_000, 150*usd, 150*usd)
	feed(t, s, encode(t, events.TopicFills, f)...)
	if st := standing(t, s, wallet, ""); st.Volume != "0" || st.Rank.Taker != nil {
		t.Fatalf("before its record the wallet has %+v", st)
	}
	if n := s.Count(t, "stats.pending_volumes"); n != 2 {
		t.Fatalf("%d pending rows, want the taker's and the maker's", n)
	}
	user := &events.NewUser{Tx: events.Tx{Ts: nowS - 2*hour, TxSig: kittest.Sig("nuser", 1), Slot: 1},
		UserAuthority: wallet, User: account, Name: "Main"}
	feed(t, s, encode(t, events.TopicNewUsers, user)...)
	want := stats.Standing{Authority: wallet, Month: "2026-11", Volume: "150000000", MakerVolume: "0", TakerVolume: "150000000",
		Pnl: "0", Rank: stats.Ranks{Volume: i64(1), Taker: i64(1)}}
	check := func(what string, want stats.Standing) {
		t.Helper()
		if st := standing(t, s, wallet, ""); !reflect.DeepEqual(st, want) {
			t.Fatalf("%s: %+v, want %+v", what, st, want)
		}
	}
	check("after its record", want)
	if n := s.Count(t, "stats.pending_volumes"); n != 1 {
		t.Fatalf("%d pending rows, want the maker's alone", n)
	}
	feed(t, s, encode(t, events.TopicFills, f)...)
	feed(t, s, encode(t, events.TopicNewUsers, user)...)
	check("after both again", want)
	s.Restart(t, "stats", true)
	feed(t, s, encode(t, events.TopicFills, fill(kittest.SOLPerp, nowS-hour+1, 2, account, other, 2_000_000_000, 150*usd, 150*usd))...)
	want.Volume, want.TakerVolume = "450000000", "450000000"
	check("after a rewound restart and a fill of the known account", want)
}

// TestAttributionUnderConcurrency: new-user records and fills of the same accounts arrive on
// different partitions, written by several writers at once and in any order; every fill ends up in
// its wallet's volume exactly once.
func TestAttributionUnderConcurrency(t *testing.T) {
	set := kit.Settings{Ingest: ingest.Config{Writers: 3, BatchSize: 50, BatchWait: 5 * time.Millisecond}}
	s := kittest.Up(t, kittest.Options{Settings: set, Partitions: 6}, service.Service())
	rng := rand.New(rand.NewPCG(7, 8))
	const accounts, fills = 120, 1500
	acct := func(i int) string { return kittest.Key(1000 + i) }
	wal := func(i int) string { return kittest.Key(5000 + i%40) } // 40 wallets of 3 accounts
	taker := map[string]int64{}
	var msgs []events.Message
	users := rng.Perm(accounts)
	markets := []kittest.Market{kittest.SOLPerp, kittest.BTCPerp, kittest.Market{Symbol: "ETH-PERP", Index: 2, Type: events.MarketTypePerp}}
	for i := range fills {
		a := rng.IntN(accounts)
		base := int64(1+rng.IntN(9)) * 100_000_000
		f := fill(markets[i%3], nowS-int64(fills-i), i+1, acct(a), "", base, 100*usd, 100*usd)
		taker[wal(a)] += base * 100 * usd / 1_000_000_000
		msgs = append(msgs, encode(t, events.TopicFills, f)...)
		// The new-user records are spread through the fills.
		if i%(fills/accounts) == 0 && len(users) > 0 {
			u := users[0]
			users = users[1:]
			msgs = append(msgs, encode(t, events.TopicNewUsers, &events.NewUser{
				Tx:            events.Tx{Ts: nowS - 2*day, TxSig: kittest.Sig("nuser", u), Slot: int64(u + 1)},
				UserAuthority: wal(u), User: acct(u), Name: "Main"})...)
		}
	}
	for _, u := range users {
		msgs = append(msgs, encode(t, events.TopicNewUsers, &events.NewUser{
			Tx:            events.Tx{Ts: nowS - 2*day, TxSig: kittest.Sig("nuser", u), Slot: int64(u + 1)},
			UserAuthority: wal(u), User: acct(u), Name: "Main"})...)
	}
	feed(t, s, msgs...)
	for w, want := range taker {
		if st := standing(t, s, w, ""); st.TakerVolume != events.NewAmount(want) {
			t.Errorf("wallet %s: taker volume %s, want %d", w, st.TakerVolume, want)
		}
	}
	if n := s.Count(t, "stats.pending_volumes"); n != 0 {
		t.Errorf("%d pending rows left", n)
	}
}

// TestMonthRollsOver: the leaderboards are UTC calendar months; a fill one second before midnight on
// the last day counts for the month it ends, the next for the month it begins.
func TestMonthRollsOver(t *testing.T) {
	clock := time.Date(2026, 11, 1, 0, 0, 30, 0, time.UTC)
	s := kittest.Up(t, kittest.Options{Now: clock}, service.Service())
	wallet, account := kittest.Key(601), kittest.Key(602)
	feed(t, s, encode(t, events.TopicNewUsers, &events.NewUser{Tx: events.Tx{Ts: clock.Unix() - day, TxSig: kittest.Sig("nuser", 1), Slot: 1},
		UserAuthority: wallet, User: account, Name: "Main"})...)
	feed(t, s, encode(t, events.TopicFills,
		fill(kittest.SOLPerp, kittest.At("2026-10-31T23:59:59Z"), 1, account, "", 1_000_000_000, 100*usd, 100*usd),
		fill(kittest.SOLPerp, kittest.At("2026-11-01T00:00:00Z"), 2, account, "", 2_000_000_000, 100*usd, 100*usd))...)
	for _, tc := range []struct{ query, month, volume string }{
		{"", "2026-11", "200000000"},
		{"?month=2026-11", "2026-11", "200000000"},
		{"?month=2026-10", "2026-10", "100000000"},
	} {
		if st := standing(t, s, wallet, tc.query); st.Month != tc.month || st.TakerVolume != events.Amount(tc.volume) {
			t.Errorf("%q: %s %s, want %s %s", tc.query, st.Month, st.TakerVolume, tc.month, tc.volume)
		}
	}
	var board struct{ Records []stats.Leader }
	s.GetJSON(t, "/stats/leaderboard?sort=taker&month=2026-10", http.StatusOK, &board)
	if len(board.Records) != 1 || board.Records[0].TakerVolume != "100000000" {
		t.Errorf("October's board: %+v", board.Records)
	}
	// The 24-hour volume spans both months.
	if got := summaryOf(t, s, "SOL-PERP"); got.QuoteVolume != "300000000" {
		t.Errorf("24-hour volume %s", got.QuoteVolume)
	}
	s.GetJSON(t, "/stats/leaderboard?month=2026-12", http.StatusBadRequest, nil)
}
