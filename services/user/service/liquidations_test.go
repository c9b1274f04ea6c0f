package service_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// earlierLiquidation is a liquidation message of account as producers wrote them before every field
// was emitted: its own sub-record only, no bitFlags, no cancelled orders.
func earlierLiquidation(account string, ts int64, id int) string {
	return fmt.Sprintf(`{"ts":%d,"txSig":"earlier%d","txSigIndex":0,"slot":300000000,"liquidationType":"liquidateSpot",
		"user":%q,"liquidator":%q,"marginRequirement":"1000000","totalCollateral":"900000","marginFreed":"100000",
		"liquidationId":%d,"bankrupt":false,"canceledOrderIds":null,"liquidateSpot_assetMarketIndex":1,
		"liquidateSpot_assetPrice":"150000000","liquidateSpot_assetTransfer":"3000000000",
		"liquidateSpot_liabilityMarketIndex":0,"liquidateSpot_liabilityPrice":"1000000",
		"liquidateSpot_liabilityTransfer":"450000000","liquidateSpot_ifFee":"2000"}`, ts, id, account, kittest.Key(91), id)
}

// TestLiquidationsOfEveryType: a liquidation of each of the six types, and one whose message has the
// earlier shape, are answered with bitFlags and every sub-record's fields (the others' as zeros) by
// the rolling and the dated lists, their CSV and the export stream; every answer is validated against
// the document.
func TestLiquidationsOfEveryType(t *testing.T) {
	s := start(t)
	account := kittest.Key(60)
	day := kittest.At("2026-11-19T09:00:00Z")
	var want []*events.Liquidation // oldest first
	var msgs []events.Message
	for i, kind := range kittest.LiquidationTypes {
		l := kittest.LiquidationOf(kind, kittest.SOLPerp, kittest.SOLSpot, account, day+int64(i), i+1)
		want = append(want, l)
		msgs = append(msgs, encode(t, events.TopicLiquidations, l)...)
	}
	old := earlierLiquidation(account, day+10, 7)
	r, err := events.Decode(events.TopicLiquidations, []byte(old))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, r.(*events.Liquidation))
	m, err := events.NewMessage(events.TopicLiquidations, account, "liquidation", json.RawMessage(old))
	if err != nil {
		t.Fatal(err)
	}
	s.Ingest(t, append(msgs, m)...)

	newestFirst := slices.Clone(want)
	slices.Reverse(newestFirst)
	for _, c := range []struct {
		path string
		want []*events.Liquidation
	}{
		{"/user/" + account + "/liquidations", newestFirst},
		{"/user/" + account + "/liquidations/2026/11", want},
	} {
		t.Run(c.path, func(t *testing.T) {
			l := getList(t, s, c.path)
			if len(l.Records) != len(c.want) {
				t.Fatalf("%d records, want %d", len(l.Records), len(c.want))
			}
			for i, rec := range l.Records {
				kittest.CheckLiquidation(t, rec, c.want[i])
			}
		})
	}

	wantCSV := func(t *testing.T, body string, recs []*events.Liquidation) {
		t.Helper()
		rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil || len(rows) != len(recs)+1 {
			t.Fatalf("%d rows (%v): %s", len(rows), err, body)
		}
		if !slices.Equal(rows[0], (*events.Liquidation)(nil).CSVHeader()) || !slices.Contains(rows[0], "bitFlags") {
			t.Errorf("header %v", rows[0])
		}
		for i, l := range recs {
			if !slices.Equal(rows[i+1], l.CSVRow()) {
				t.Errorf("row %d\n got  %v\n want %v", i+1, rows[i+1], l.CSVRow())
			}
		}
	}
	t.Run("dated CSV", func(t *testing.T) {
		wantCSV(t, s.Get(t, "/user/"+account+"/liquidations/2026/11?format=csv").Body.String(), want)
	})
	t.Run("export", func(t *testing.T) {
		q := fmt.Sprintf("liquidations?from=%d&to=%d&accounts=%s", day, day+60, account)
		status, body, count := exportCSV(t, s, q)
		if status != 200 || count != fmt.Sprint(len(want)) {
			t.Fatalf("status %d, %s records: %s", status, count, body)
		}
		wantCSV(t, body, want)
	})
}

// TestLiquidationsStoredBeforeEveryField: a record stored before liquidation records carried every
// field is given the ones it lacks by the schema's migration, keeping its own.
func TestLiquidationsStoredBeforeEveryField(t *testing.T) {
	s := start(t)
	account := kittest.Key(61)
	day := kittest.At("2026-11-19T09:00:00Z")
	// Stored as the earlier sink stored it: the message's JSON, null cancelled orders made [].
	stored := func(ts int64, id int) string {
		return strings.Replace(earlierLiquidation(account, ts, id), `"canceledOrderIds":null`, `"canceledOrderIds":[]`, 1)
	}
	old, withFlags := stored(day, 1), strings.Replace(stored(day+1, 2), `"bankrupt":false`, `"bankrupt":false,"bitFlags":1`, 1)
	s.Ingest(t, encode(t, events.TopicLiquidations, kittest.LiquidationOf(events.LiquidationTypePerp, kittest.SOLPerp, kittest.SOLSpot, account, day+2, 3))...)
	ctx := context.Background()
	for i, rec := range []string{old, withFlags} {
		if _, err := s.Pool.Exec(ctx, `INSERT INTO users.liquidations (account, ts, tx_sig, tx_sig_index, spot_market, record)
			VALUES ($1, $2, $3, 0, 0, $4::json)`, account, day+int64(i), fmt.Sprint("earlier", i+1), rec); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Pool.Exec(ctx, `DELETE FROM users.schema_migrations WHERE version = '002_liquidations_every_field.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Restart(t, "user", false) // applies the migration again

	l := getList(t, s, "/user/"+account+"/liquidations/2026/11")
	if len(l.Records) != 3 {
		t.Fatalf("%d records", len(l.Records))
	}
	for i, rec := range l.Records[:2] {
		r, err := events.Decode(events.TopicLiquidations, []byte([]string{old, withFlags}[i]))
		if err != nil {
			t.Fatal(err)
		}
		kittest.CheckLiquidation(t, rec, r.(*events.Liquidation))
	}
	kittest.CheckLiquidation(t, l.Records[2], kittest.LiquidationOf(events.LiquidationTypePerp, kittest.SOLPerp, kittest.SOLSpot, account, day+2, 3))
}
