package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

// liquidationPage is a page of /stats/liquidations or /stats/bankruptcies.
type liquidationPage struct {
	Records []json.RawMessage `json:"records"`
}

// TestLiquidationsOfEveryType: /stats/liquidations (the four liquidation types) and
// /stats/bankruptcies (the two bankruptcies) answer every record with bitFlags and every
// sub-record's fields, the others' as zeros; every answer is validated against the document.
func TestLiquidationsOfEveryType(t *testing.T) {
	s := start(t)
	account := kittest.Key(60)
	ts := kittest.DefaultNow.Unix() - 3600
	byType := map[string]*events.Liquidation{}
	var msgs []events.Message
	for i, kind := range kittest.LiquidationTypes {
		l := kittest.LiquidationOf(kind, kittest.SOLPerp, kittest.SOLSpot, account, ts+int64(i), i+1)
		byType[kind] = l
		msgs = append(msgs, encode(t, events.TopicLiquidations, l)...)
	}
	s.Ingest(t, msgs...)

	for _, c := range []struct {
		path  string
		kinds []string // newest first
	}{
		{"/stats/liquidations", []string{events.LiquidationTypeSpotBankruptcy, events.LiquidationTypePerpBankruptcy,
			events.LiquidationTypePerpPnlForDeposit, events.LiquidationTypeBorrowForPerpPnl, events.LiquidationTypeSpot,
			events.LiquidationTypePerp}},
		{"/stats/bankruptcies", []string{events.LiquidationTypeSpotBankruptcy, events.LiquidationTypePerpBankruptcy}},
	} {
		t.Run(c.path, func(t *testing.T) {
			var page liquidationPage
			s.GetJSON(t, c.path, http.StatusOK, &page)
			if len(page.Records) != len(c.kinds) {
				t.Fatalf("%d records, want %d", len(page.Records), len(c.kinds))
			}
			for i, rec := range page.Records {
				kittest.CheckLiquidation(t, rec, byType[c.kinds[i]])
			}
		})
	}
}

// TestLiquidationsStoredBeforeEveryField: a record stored before liquidation records carried every
// field is given the ones it lacks by the schema's migration, keeping its own.
func TestLiquidationsStoredBeforeEveryField(t *testing.T) {
	s := start(t)
	ts := kittest.DefaultNow.Unix() - 3600
	// A perp liquidation as the earlier sink stored it: the message's own sub-record, bitFlags left out.
	l := kittest.Liquidation(kittest.SOLPerp, kittest.Key(61), ts, 1)
	l.CanceledOrderIDs = []string{}
	full, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(full, &fields); err != nil {
		t.Fatal(err)
	}
	for name := range fields {
		if name == "bitFlags" || strings.Contains(name, "_") && !strings.HasPrefix(name, "liquidatePerp_") {
			delete(fields, name)
		}
	}
	old, err := json.Marshal(fields)
	if err != nil || strings.Contains(string(old), "bitFlags") || strings.Contains(string(old), "liquidateSpot_") {
		t.Fatalf("the earlier record is not of the earlier shape (%v): %s", err, old)
	}
	s.Ingest(t, encode(t, events.TopicLiquidations, kittest.Liquidation(kittest.SOLPerp, kittest.Key(61), ts+1, 2))...)
	ctx := context.Background()
	if _, err := s.Pool.Exec(ctx, `INSERT INTO stats.liquidations (ts, tx_sig, tx_sig_index, slot, liquidation_type,
		bankruptcy, priced, amount, record) VALUES ($1, $2, 0, $3, 'liquidatePerp', false, false, 150000000, $4::json)`,
		l.Ts, l.TxSig, l.Slot, string(old)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `DELETE FROM stats.schema_migrations WHERE version = '002_liquidations_every_field.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Restart(t, "stats", false) // applies the migration again

	var page liquidationPage
	s.GetJSON(t, "/stats/liquidations", http.StatusOK, &page)
	if len(page.Records) != 2 {
		t.Fatalf("%d records", len(page.Records))
	}
	kittest.CheckLiquidation(t, page.Records[0], kittest.Liquidation(kittest.SOLPerp, kittest.Key(61), ts+1, 2))
	kittest.CheckLiquidation(t, page.Records[1], l)
}
