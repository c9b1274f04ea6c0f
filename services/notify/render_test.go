package notify_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/notify"
)

var owner = notify.Owner{Authority: kittest.Key(50), SubAccountID: 2, Name: "Degen\x00\x00  "}

func names(t events.MarketType, i int) string {
	if t == events.MarketTypeSpot && i == 1 {
		return "SOL"
	}
	if t == events.MarketTypePerp && i == 0 {
		return "SOL-PERP"
	}
	return ""
}

func render(t *testing.T, o notify.Occurrence) notify.Draft {
	t.Helper()
	d, err := notify.Render(o, owner, names)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(d.Data) {
		t.Fatalf("data %s", d.Data)
	}
	return d
}

func intp(i int) *int { return &i }

// TestRenderTitlesAndBodies: what each event says, in words and amounts a person reads.
func TestRenderTitlesAndBodies(t *testing.T) {
	ts := kittest.At("2026-11-19T12:00:00Z")
	liq := func(typ string, set func(*events.Liquidation)) notify.Occurrence {
		l := &events.Liquidation{Tx: events.Tx{Ts: ts, TxSig: "s"}, User: kittest.Key(2), LiquidationType: typ, MarginFreed: "1234567890"}
		set(l)
		return notify.LiquidationOccurrence(l)
	}
	dep := func(dir, expl, symbol string, idx int, amount events.Amount) notify.Occurrence {
		return notify.DepositOccurrence(&events.Deposit{Tx: events.Tx{Ts: ts, TxSig: "d"}, User: kittest.Key(2), Direction: dir, Explanation: expl,
			Symbol: symbol, MarketIndex: idx, Amount: amount, DepositRecordID: "9"})
	}
	bet := kittest.Fill(kittest.BetMkt, ts, 4, 620_000, 1_000_000_000, 620_000)
	small, _ := notify.FundingOccurrence(&events.FundingPayment{Tx: events.Tx{Ts: ts, TxSig: "f"},
		User: kittest.Key(2), MarketIndex: 7, FundingPayment: "3000"}, 1)
	cases := []struct {
		o           notify.Occurrence
		title, body string
		typ         string
	}{
		{notify.FillOccurrences(bet)[0], "Order filled", "Your long order #10004 on TRUMP-WIN-2028-BET is filled: 1 at $0.62 (Degen).", notify.TypeRecordUpdate},
		{liq(events.LiquidationTypePerp, func(l *events.Liquidation) { l.LiquidatePerpMarketIndex = intp(0) }),
			"Account liquidated", "Degen was liquidated: its SOL-PERP position. Margin freed: $1,234.57.", notify.TypeAccountUpdate},
		{liq(events.LiquidationTypeSpot, func(l *events.Liquidation) {
			l.LiquidateSpotAssetMarketIndex, l.LiquidateSpotLiabilityMarketIndex = intp(0), intp(1)
		}), "Account liquidated", "Degen was liquidated: its SOL borrow, against spot market 0. Margin freed: $1,234.57.", notify.TypeAccountUpdate},
		{liq(events.LiquidationTypeBorrowForPerpPnl, func(l *events.Liquidation) {
			l.LiquidateBorrowForPerpPnlPerpMarketIndex, l.LiquidateBorrowForPerpPnlLiabilityMarketIndex = intp(0), intp(1)
		}), "Account liquidated", "Degen was liquidated: its SOL borrow, against SOL-PERP P&L. Margin freed: $1,234.57.", notify.TypeAccountUpdate},
		{liq(events.LiquidationTypePerpPnlForDeposit, func(l *events.Liquidation) {
			l.LiquidatePerpPnlForDepositPerpMarketIndex, l.LiquidatePerpPnlForDepositAssetMarketIndex = intp(2), intp(1)
		}), "Account liquidated", "Degen was liquidated: its perp market 2 losses, against its SOL deposit. Margin freed: $1,234.57.", notify.TypeAccountUpdate},
		{liq(events.LiquidationTypePerpBankruptcy, func(l *events.Liquidation) { l.PerpBankruptcyMarketIndex, l.MarginFreed = intp(0), "0" }),
			"Account bankrupt", "Degen went bankrupt in SOL-PERP.", notify.TypeAccountUpdate},
		{liq(events.LiquidationTypeSpotBankruptcy, func(l *events.Liquidation) { l.SpotBankruptcyMarketIndex, l.MarginFreed = intp(1), "0" }),
			"Account bankrupt", "Degen went bankrupt on its SOL borrow.", notify.TypeAccountUpdate},
		{dep(events.DepositDirectionDeposit, events.DepositExplanationTransfer, "SOL", 1, "1"), "Transfer received",
			"Degen received a transfer of 0.000000001 SOL.", notify.TypeRecordUpdate},
		{dep(events.DepositDirectionWithdraw, events.DepositExplanationTransfer, "USDC", 0, "1000000"), "Transfer sent",
			"Degen transferred out 1 USDC.", notify.TypeRecordUpdate},
		{dep(events.DepositDirectionWithdraw, events.DepositExplanationBorrow, "wBTC", 3, "12345678"), "Borrow confirmed",
			"Degen borrowed 0.12345678 wBTC.", notify.TypeRecordUpdate},
		{dep(events.DepositDirectionDeposit, events.DepositExplanationRepayBorrow, "USDC", 0, "1500000"), "Borrow repaid",
			"Degen repaid 1.5 USDC of its borrow.", notify.TypeRecordUpdate},
		{dep(events.DepositDirectionDeposit, events.DepositExplanationNone, "NEWCOIN", 40, "77"), "Deposit confirmed",
			"Degen deposited NEWCOIN.", notify.TypeRecordUpdate},
		{small, "Funding payment", "Degen received $0.003 of funding on perp market 7.", notify.TypeRecordUpdate},
	}
	for _, tc := range cases {
		d := render(t, tc.o)
		if d.Title != tc.title || d.Body != tc.body || d.Type != tc.typ {
			t.Errorf("%s: %q %q %s, want %q %q %s", tc.o.Source, d.Title, d.Body, d.Type, tc.title, tc.body, tc.typ)
		}
		if d.Authority != owner.Authority || d.CreatedAt != ts || len(d.Actions) == 0 || !strings.HasPrefix(d.Actions[0].Link, "/user/"+kittest.Key(2)+"/") {
			t.Errorf("%s: %+v", tc.o.Source, d)
		}
	}
}

// TestWhatIsNoNews: a settlement of nothing and funding under the minimum make no notification.
func TestWhatIsNoNews(t *testing.T) {
	if _, ok := notify.SettlePnlOccurrence(&events.SettlePnl{Pnl: "0"}); ok {
		t.Error("a zero settlement is news")
	}
	for payment, want := range map[events.Amount]bool{"-999999": false, "999999": false, "-1000000": true, "1000000": true, "0": false,
		"-9223372036854775808": true, "99999999999999999999": true} {
		if _, ok := notify.FundingOccurrence(&events.FundingPayment{FundingPayment: payment}, 1_000_000); ok != want {
			t.Errorf("funding %s notified = %v, want %v", payment, ok, want)
		}
	}
	// A fill of an account with itself is one occurrence; an AMM fill has no maker side.
	f := kittest.Fill(kittest.SOLPerp, 1, 1, 1, 1, 1)
	f.Maker = f.Taker
	if n := len(notify.FillOccurrences(f)); n != 1 {
		t.Errorf("self-trade: %d occurrences", n)
	}
	f.Maker, f.MakerOrderID, f.MakerOrderDirection = "", "", ""
	if n := len(notify.FillOccurrences(f)); n != 1 {
		t.Errorf("AMM fill: %d occurrences", n)
	}
}

// TestNotificationID: a UUIDv7 of the event's time, the same for the same event and wallet, another
// for another wallet or event.
func TestNotificationID(t *testing.T) {
	ts := kittest.At("2026-11-19T12:00:00Z")
	id := notify.NotificationID("w", "fill", "sig", 1, ts)
	if id != notify.NotificationID("w", "fill", "sig", 1, ts) || !notify.ValidID(id) || id[14] != '7' || !strings.ContainsAny(id[19:20], "89ab") {
		t.Fatalf("id %s", id)
	}
	for _, other := range []string{
		notify.NotificationID("v", "fill", "sig", 1, ts), notify.NotificationID("w", "deposit", "sig", 1, ts),
		notify.NotificationID("w", "fill", "sig", 2, ts), notify.NotificationID("w", "fill", "sih", 1, ts),
	} {
		if other == id {
			t.Errorf("%s repeats", other)
		}
	}
	// Ids sort by time: the first 48 bits are the milliseconds.
	if later := notify.NotificationID("a", "fill", "sig", 1, ts+1); later <= id {
		t.Errorf("%s does not sort after %s", later, id)
	}
	for _, bad := range []string{"", "x", strings.ToUpper(id), id + "0", strings.Replace(id, "-", "_", 1)} {
		if notify.ValidID(bad) {
			t.Errorf("ValidID(%q)", bad)
		}
	}
}

// TestParseMessage: one JSON object of the known fields, each of its type, ts whole or fractional.
func TestParseMessage(t *testing.T) {
	good := []string{
		`{"action":"notifications","ts":1714521600,"walletAddress":"w"}`,
		`{"action":"notifications","ts":1714521600.123,"walletAddress":"w","isDelegate":true,"serviceUserAccount":"a"}`,
		` {"walletAddress":"w","ts":1.7145216e9,"action":"notifications","isDelegate":false} `,
	}
	for _, s := range good {
		if _, err := notify.ParseMessage(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := []string{
		``, `null`, `[]`, `"x"`, `{`, `{"action":"notifications","ts":"1714521600","walletAddress":"w"}`,
		`{"action":"notifications","ts":1e999,"walletAddress":"w"}`, `{"action":1,"ts":1,"walletAddress":"w"}`,
		`{"action":"notifications","ts":1,"walletAddress":"w","nonce":"x"}`, `{"ts":1} {}`,
		`{"action":"notifications","ts":1,"walletAddress":"w","isDelegate":"true"}`, strings.Repeat(" ", 1025) + "{}",
	}
	for _, s := range bad {
		if _, err := notify.ParseMessage(s); err == nil {
			t.Errorf("%.80q accepted", s)
		}
	}
}

// TestDecodeSignature: 64 bytes in base58 or any base64, nothing else.
func TestDecodeSignature(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	sig := ed25519.Sign(key, []byte("m"))
	for _, s := range []string{events.EncodeBase58(sig), base64.StdEncoding.EncodeToString(sig), base64.RawStdEncoding.EncodeToString(sig),
		base64.URLEncoding.EncodeToString(sig), base64.RawURLEncoding.EncodeToString(sig)} {
		if got, ok := notify.DecodeSignature(s); !ok || string(got) != string(sig) {
			t.Errorf("%s: %x %v", s, got, ok)
		}
	}
	for _, s := range []string{"", events.EncodeBase58(sig[:63]) + "=", base64.StdEncoding.EncodeToString(sig[:48]),
		base64.StdEncoding.EncodeToString(append(sig, 0)), strings.Repeat("A", 101), "%%%"} {
		if got, ok := notify.DecodeSignature(s); ok {
			t.Errorf("%q decoded to %x", s, got)
		}
	}
}
