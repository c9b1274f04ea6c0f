package service_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// position is the part of a closed-position record the tests read.
type position struct {
	Ts                           int64  `json:"ts"`
	User                         string `json:"user"`
	FillRecordID                 string `json:"fillRecordId"`
	UserFee                      string `json:"userFee"`
	BaseClosedForPnl             string `json:"baseClosedForPnl"`
	UserExistingBaseAssetAmount  string `json:"userExistingBaseAssetAmount"`
	UserExistingQuoteEntryAmount string `json:"userExistingQuoteEntryAmount"`
}

// sequence is open long 2 at 100, add 1 at 130, sell 1 at 150 (partial close), sell 3 at 120 (flip),
// buy 1 at 90 (close), for the taker; ids from first.
func sequence(first int, t0 int64, takerAccount, makerAccount string) []*events.Fill {
	steps := []struct {
		dir         string
		base, quote int64
	}{
		{events.DirectionLong, 2, 200}, {events.DirectionLong, 1, 130}, {events.DirectionShort, 1, 150},
		{events.DirectionShort, 3, 360}, {events.DirectionLong, 1, 90},
	}
	var out []*events.Fill
	for i, st := range steps {
		f := fill(kittest.SOLPerp, t0+int64(i)*60, first+i, st.dir, st.base*1_000_000_000, st.quote*1_000_000)
		f.Taker, f.Maker = takerAccount, makerAccount
		out = append(out, f)
	}
	return out
}

// TestClosedPositionsByHand: the fills that reduce, flip and close the taker's position are its
// closed positions, with the fee it paid, the base it closed and its position before, as worked out
// by hand; the maker, on the other side of each fill, closes its own.
func TestClosedPositionsByHand(t *testing.T) {
	s := start(t)
	t0 := kittest.At("2026-11-19T10:00:00Z")
	fills := sequence(1, t0, taker, maker)
	recs := make([]events.Record, len(fills))
	for i, f := range fills {
		recs[i] = f
	}
	s.Ingest(t, encode(t, events.TopicFills, recs...)...)
	var l list
	s.GetJSON(t, "/user/"+taker+"/positions", http.StatusOK, &l)
	got := kittest.Records[position](t, l.Records)
	b, q := int64(1_000_000_000), int64(1_000_000)
	want := []position{ // newest first
		{Ts: t0 + 240, User: taker, FillRecordID: "5", UserFee: fmt.Sprint(90 * q * 35 / 100_000), BaseClosedForPnl: fmt.Sprint(b),
			UserExistingBaseAssetAmount: fmt.Sprint(-b), UserExistingQuoteEntryAmount: fmt.Sprint(120 * q)},
		{Ts: t0 + 180, User: taker, FillRecordID: "4", UserFee: fmt.Sprint(360 * q * 35 / 100_000), BaseClosedForPnl: fmt.Sprint(-2 * b),
			UserExistingBaseAssetAmount: fmt.Sprint(2 * b), UserExistingQuoteEntryAmount: fmt.Sprint(-220 * q)},
		{Ts: t0 + 120, User: taker, FillRecordID: "3", UserFee: fmt.Sprint(150 * q * 35 / 100_000), BaseClosedForPnl: fmt.Sprint(-b),
			UserExistingBaseAssetAmount: fmt.Sprint(3 * b), UserExistingQuoteEntryAmount: fmt.Sprint(-330 * q)},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("taker's closed positions:\n got %+v\nwant %+v", got, want)
	}
	s.GetJSON(t, "/user/"+maker+"/positions", http.StatusOK, &l)
	m := kittest.Records[position](t, l.Records)
	if len(m) != 3 || m[0].BaseClosedForPnl != fmt.Sprint(-b) || m[0].UserExistingBaseAssetAmount != fmt.Sprint(b) ||
		m[0].UserFee != fmt.Sprint(-90*q/100_000) {
		t.Fatalf("maker's closed positions: %+v", m)
	}
}

// TestLateFillDerivesThePositionsAgain: a fill that arrives after later ones of its account and market
// leaves the same closed positions as the whole sequence in order.
func TestLateFillDerivesThePositionsAgain(t *testing.T) {
	s := start(t)
	t0 := kittest.At("2026-11-19T10:00:00Z")
	inOrder := sequence(1, t0, kittest.Key(50), kittest.Key(51))
	late := sequence(101, t0, kittest.Key(60), kittest.Key(61))
	var first []events.Record
	for _, f := range inOrder {
		first = append(first, f)
	}
	for i, f := range late {
		if i != 1 {
			first = append(first, f)
		}
	}
	s.Ingest(t, encode(t, events.TopicFills, first...)...)
	s.Ingest(t, encode(t, events.TopicFills, late[1])...) // the "add 1 at 130", after the rest
	for _, pair := range [][2]string{{kittest.Key(50), kittest.Key(60)}, {kittest.Key(51), kittest.Key(61)}} {
		var a, b list
		s.GetJSON(t, "/user/"+pair[0]+"/positions", http.StatusOK, &a)
		s.GetJSON(t, "/user/"+pair[1]+"/positions", http.StatusOK, &b)
		pa, pb := kittest.Records[position](t, a.Records), kittest.Records[position](t, b.Records)
		if len(pa) != 3 || len(pa) != len(pb) {
			t.Fatalf("%d and %d closed positions", len(pa), len(pb))
		}
		for i := range pa {
			x, y := pa[i], pb[i]
			x.User, y.User, x.FillRecordID, y.FillRecordID = "", "", "", ""
			if x != y {
				t.Errorf("closed position %d: in order %+v, with a late fill %+v", i, x, y)
			}
		}
	}
}

// TestPositionsFollowTheFillRecordIDs: fills of one slot move positions in the order of their market's
// fill record ids, whatever their signatures' order and whatever order they arrive in, one batch or
// one at a time (each then a late fill but the first).
func TestPositionsFollowTheFillRecordIDs(t *testing.T) {
	s := start(t)
	t0 := kittest.At("2026-11-19T10:00:00Z")
	closed := func(account string) map[string]position {
		t.Helper()
		var l list
		s.GetJSON(t, "/user/"+account+"/positions", http.StatusOK, &l)
		out := map[string]position{}
		for _, p := range kittest.Records[position](t, l.Records) {
			id := p.FillRecordID
			p.Ts, p.User, p.FillRecordID = 0, "", ""
			out[id] = p
		}
		return out
	}
	// The by-hand sequence, each fill a minute after the one before.
	reference := sequence(1, t0, kittest.Key(80), kittest.Key(81))
	var recs []events.Record
	for _, f := range reference {
		recs = append(recs, f)
	}
	s.Ingest(t, encode(t, events.TopicFills, recs...)...)

	// The same, all in one slot, the signatures in the opposite order to the ids.
	oneSlot := func(first int, taker, maker string) []*events.Fill {
		fills := sequence(first, t0+3600, taker, maker)
		for i, f := range fills {
			f.Ts, f.Slot, f.TxSig, f.TxSigIndex = t0+3600, fills[0].Slot, kittest.Sig("slotf", first+len(fills)-i), 0
		}
		return fills
	}
	batch := oneSlot(101, kittest.Key(82), kittest.Key(83))
	recs = recs[:0]
	for _, i := range []int{3, 0, 4, 2, 1} {
		recs = append(recs, batch[i])
	}
	s.Ingest(t, encode(t, events.TopicFills, recs...)...)
	singly := oneSlot(201, kittest.Key(84), kittest.Key(85))
	for i := len(singly) - 1; i >= 0; i-- {
		s.Ingest(t, encode(t, events.TopicFills, singly[i])...)
	}

	for _, c := range []struct {
		name         string
		taker, maker string
		first        int
	}{{"one batch", kittest.Key(82), kittest.Key(83), 101}, {"one at a time, newest first", kittest.Key(84), kittest.Key(85), 201}} {
		for _, pair := range [][2]string{{kittest.Key(80), c.taker}, {kittest.Key(81), c.maker}} {
			want, got := closed(pair[0]), closed(pair[1])
			if len(want) != 3 || len(got) != len(want) {
				t.Fatalf("%s: %d closed positions of %s, want %d", c.name, len(got), pair[1], len(want))
			}
			for id, w := range want {
				n, _ := strconv.Atoi(id)
				if g := got[strconv.Itoa(c.first+n-1)]; g != w {
					t.Errorf("%s: the closed position of fill %d of %s is %+v, want %+v", c.name, n, pair[1], g, w)
				}
			}
		}
	}
}
