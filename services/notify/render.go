package notify

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
)

// Owner is what protocol.new-users says of an account: the wallet it belongs to and its name.
type Owner struct {
	Authority    string
	SubAccountID int
	Name         string
}

// label is how a notification names the account: its name, else its subaccount number.
func (o Owner) label() string {
	// On chain a name is 32 bytes padded with spaces or NULs.
	if n := strings.Trim(o.Name, "\x00 \t\r\n"); n != "" {
		return n
	}
	return fmt.Sprintf("Subaccount %d", o.SubAccountID)
}

// MarketNames returns the symbol of market index of type t, "" when it is not known.
type MarketNames func(t events.MarketType, index int) string

// Draft is a notification as rendered from an occurrence: everything but its delivery (status,
// channels, sentAt), with the event's key it is stored under.
type Draft struct {
	Notification
	Source     string
	Account    string
	TxSig      string
	TxSigIndex int
}

// Render makes the notification of o to owner's wallet. The same occurrence and owner always render
// the same notification, its id included: a replayed event finds its notification already stored.
func Render(o Occurrence, owner Owner, names MarketNames) (Draft, error) {
	r := renderer{o: o, owner: owner, names: names, data: map[string]any{
		"event": o.Source, "accountId": o.Account, "txSig": o.TxSig, "txSigIndex": o.TxSigIndex, "ts": o.Ts,
	}}
	if o.MarketIndex != nil {
		r.data["marketIndex"] = *o.MarketIndex
		r.data["marketType"] = o.MarketType
		if sym := r.symbol(); sym != "" {
			r.data["symbol"] = sym
		}
	}
	switch {
	case o.Source == SourceFill && o.Fill != nil:
		r.fill()
	case o.Source == SourceLiquidation && o.Liquidation != nil:
		r.liquidation()
	case o.Source == SourceDeposit && o.Deposit != nil:
		r.deposit()
	case o.Source == SourceSettlePnl:
		r.settlePnl()
	case o.Source == SourceFundingPayment:
		r.funding()
	default:
		return Draft{}, fmt.Errorf("occurrence of %q lacks its facts", o.Source)
	}
	data, err := Encode(r.data)
	if err != nil {
		return Draft{}, fmt.Errorf("encode the data of a %s notification: %w", o.Source, err)
	}
	return Draft{
		Notification: Notification{
			ID: NotificationID(owner.Authority, o.Source, o.TxSig, o.TxSigIndex, o.Ts), Authority: owner.Authority,
			Title: r.title, Body: r.body, Type: r.typ, Data: data, Actions: r.actions, CreatedAt: o.Ts,
		},
		Source: o.Source, Account: o.Account, TxSig: o.TxSig, TxSigIndex: o.TxSigIndex,
	}, nil
}

type renderer struct {
	o     Occurrence
	owner Owner
	names MarketNames

	typ, title, body string
	data             map[string]any
	actions          []Action
}

// symbol is the occurrence's market's symbol, or "" when neither the event nor the catalogue knows it.
func (r *renderer) symbol() string {
	if r.o.Symbol != "" {
		return r.o.Symbol
	}
	if r.o.MarketIndex != nil && r.names != nil {
		return r.names(r.o.MarketType, *r.o.MarketIndex)
	}
	return ""
}

// market names the occurrence's market for a sentence.
func (r *renderer) market() string {
	if s := r.symbol(); s != "" {
		return s
	}
	if r.o.MarketIndex == nil {
		return "a market"
	}
	return fmt.Sprintf("%s market %d", r.o.MarketType, *r.o.MarketIndex)
}

func (r *renderer) spotMarket(i *int) string {
	if i == nil {
		return "a spot market"
	}
	if r.names != nil {
		if s := r.names(events.MarketTypeSpot, *i); s != "" {
			return s
		}
	}
	return fmt.Sprintf("spot market %d", *i)
}

func (r *renderer) link(label, format string, args ...any) {
	r.actions = append(r.actions, Action{Label: label, Link: fmt.Sprintf(format, args...)})
}

func (r *renderer) fill() {
	f := r.o.Fill
	r.typ = TypeRecordUpdate
	full := !filledLess(f.FilledBase, f.OrderBase)
	r.title = "Order filled"
	if !full {
		r.title = "Order partially filled"
	}
	for k, v := range map[string]any{
		"role": f.Role, "direction": f.Direction, "orderId": f.OrderID, "fillRecordId": f.FillRecordID,
		"baseAssetAmountFilled": f.Base, "quoteAssetAmountFilled": f.Quote,
		"orderBaseAssetAmount": f.OrderBase, "orderBaseAssetAmountFilled": f.FilledBase,
	} {
		r.data[k] = v
	}
	acct := r.owner.label()
	if r.o.MarketType == events.MarketTypeSpot {
		side := map[string]string{events.DirectionLong: "buy", events.DirectionShort: "sell"}[f.Direction]
		state := "is filled"
		if !full {
			state = "is partially filled"
		}
		r.body = fmt.Sprintf("Your %s order #%s on %s %s: %s in this fill (%s).", side, f.OrderID, r.market(), state, usd(f.Quote, false), acct)
	} else {
		price := fillPrice(f.Quote, f.Base)
		if full {
			r.body = fmt.Sprintf("Your %s order #%s on %s is filled: %s at %s (%s).", f.Direction, f.OrderID, r.market(),
				decimal(f.Base, 9), price, acct)
		} else {
			r.body = fmt.Sprintf("Your %s order #%s on %s is %s of %s filled: %s at %s (%s).", f.Direction, f.OrderID, r.market(),
				decimal(f.FilledBase, 9), decimal(f.OrderBase, 9), decimal(f.Base, 9), price, acct)
		}
	}
	r.link("View order", "/user/%s/orders/id/%s", r.o.Account, f.OrderID)
	if sym := r.symbol(); sym != "" {
		r.link("View trades", "/user/%s/trades/%s", r.o.Account, sym)
	}
}

func (r *renderer) liquidation() {
	l := r.o.Liquidation
	r.typ = TypeAccountUpdate
	for k, v := range map[string]any{
		"liquidationType": l.Type, "liquidationId": l.ID, "bankrupt": l.Bankrupt, "marginFreed": l.MarginFreed,
	} {
		r.data[k] = v
	}
	var what string
	switch l.Type {
	case events.LiquidationTypePerp:
		what = "was liquidated: its " + r.market() + " position"
	case events.LiquidationTypeSpot:
		what = fmt.Sprintf("was liquidated: its %s borrow, against %s", r.spotMarket(l.LiabilitySpot), r.spotMarket(l.SpotMarket))
	case events.LiquidationTypeBorrowForPerpPnl:
		what = fmt.Sprintf("was liquidated: its %s borrow, against %s P&L", r.spotMarket(l.LiabilitySpot), r.market())
	case events.LiquidationTypePerpPnlForDeposit:
		what = fmt.Sprintf("was liquidated: its %s losses, against its %s deposit", r.market(), r.spotMarket(l.SpotMarket))
	case events.LiquidationTypePerpBankruptcy:
		what = "went bankrupt in " + r.market()
	case events.LiquidationTypeSpotBankruptcy:
		what = "went bankrupt on its " + r.spotMarket(l.LiabilitySpot) + " borrow"
	default:
		what = "was liquidated"
	}
	r.title = "Account liquidated"
	if l.Bankrupt || l.Type == events.LiquidationTypePerpBankruptcy || l.Type == events.LiquidationTypeSpotBankruptcy {
		r.title = "Account bankrupt"
	}
	r.body = fmt.Sprintf("%s %s.", r.owner.label(), what)
	if l.MarginFreed != "" && l.MarginFreed != "0" {
		r.body += fmt.Sprintf(" Margin freed: %s.", usd(l.MarginFreed, false))
	}
	r.link("View liquidations", "/user/%s/liquidations", r.o.Account)
}

func (r *renderer) deposit() {
	d := r.o.Deposit
	r.typ = TypeRecordUpdate
	for k, v := range map[string]any{
		"direction": d.Direction, "explanation": d.Explanation, "amount": d.Amount, "depositRecordId": d.RecordID,
	} {
		r.data[k] = v
	}
	sym := r.market()
	amount := sym
	if dec, ok := tokenDecimals(r.o.Symbol); ok {
		amount = decimal(d.Amount, dec) + " " + sym
	}
	acct := r.owner.label()
	withdraw := d.Direction == events.DepositDirectionWithdraw
	switch {
	case d.Explanation == events.DepositExplanationReward:
		r.title, r.body = "Reward received", fmt.Sprintf("%s received %s of rewards.", acct, amount)
	case d.Explanation == events.DepositExplanationTransfer && withdraw:
		r.title, r.body = "Transfer sent", fmt.Sprintf("%s transferred out %s.", acct, amount)
	case d.Explanation == events.DepositExplanationTransfer:
		r.title, r.body = "Transfer received", fmt.Sprintf("%s received a transfer of %s.", acct, amount)
	case d.Explanation == events.DepositExplanationBorrow:
		r.title, r.body = "Borrow confirmed", fmt.Sprintf("%s borrowed %s.", acct, amount)
	case d.Explanation == events.DepositExplanationRepayBorrow:
		r.title, r.body = "Borrow repaid", fmt.Sprintf("%s repaid %s of its borrow.", acct, amount)
	case withdraw:
		r.title, r.body = "Withdrawal confirmed", fmt.Sprintf("%s withdrew %s.", acct, amount)
	default:
		r.title, r.body = "Deposit confirmed", fmt.Sprintf("%s deposited %s.", acct, amount)
	}
	if d.Explanation == events.DepositExplanationReward {
		r.link("View rewards", "/user/%s/rewards", r.o.Account)
	} else {
		r.link("View deposits", "/user/%s/deposits", r.o.Account)
	}
}

func (r *renderer) settlePnl() {
	r.typ = TypeRecordUpdate
	r.data["pnl"] = r.o.Pnl
	r.title = "P&L settled"
	r.body = fmt.Sprintf("%s settled %s of %s P&L.", r.owner.label(), usd(r.o.Pnl, true), r.market())
	r.link("View settlements", "/user/%s/settlePnl", r.o.Account)
}

func (r *renderer) funding() {
	r.typ = TypeRecordUpdate
	r.data["fundingPayment"] = r.o.Funding
	r.title = "Funding payment"
	verb, amount := "received", r.o.Funding
	if strings.HasPrefix(string(amount), "-") {
		verb, amount = "paid", amount[1:]
	}
	r.body = fmt.Sprintf("%s %s %s of funding on %s.", r.owner.label(), verb, usd(amount, false), r.market())
	r.link("View funding payments", "/user/%s/fundingPayments", r.o.Account)
}

// NotificationID is the id of the notification of an event (source, txSig, txSigIndex at ts) to
// authority: a UUIDv7 whose time is the event's and whose other 74 bits are a hash of the rest, so
// ids sort by event time and every replica, and every replay, names a notification alike.
func NotificationID(authority, source, txSig string, txSigIndex int, ts int64) string {
	h := sha256.New()
	for _, s := range []string{authority, source, txSig} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var idx [8]byte
	binary.BigEndian.PutUint64(idx[:], uint64(txSigIndex))
	h.Write(idx[:])
	sum := h.Sum(nil)
	var u [16]byte
	ms := uint64(max(ts, 0)) * 1000
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	copy(u[6:], sum[:10])
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // RFC 9562 variant
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:], u[10:])
	return string(out[:])
}

// ValidID reports whether s is a notification id: a UUID in its canonical lower-case form.
func ValidID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}

// Encode encodes v as the feed's list envelope writes its records (json.Marshal: compact, with <, >
// and & escaped), so that what edge.notifications carries is byte for byte what the feed serves.
func Encode(v any) ([]byte, error) { return json.Marshal(v) }

// filledLess reports whether the cumulative filled amount is below the order's amount; an order
// whose amounts do not parse counts as filled.
func filledLess(filled, order events.Amount) bool {
	f, err1 := filled.Big()
	o, err2 := order.Big()
	return err1 == nil && err2 == nil && f.Cmp(o) < 0
}

// decimal writes a as a decimal number of exp decimals, without trailing zeros ("1.5", "0.01").
func decimal(a events.Amount, exp int) string {
	v, err := a.Big()
	if err != nil {
		return string(a)
	}
	neg := v.Sign() < 0
	digits := new(big.Int).Abs(v).String()
	if len(digits) <= exp {
		digits = strings.Repeat("0", exp-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-exp], strings.TrimRight(digits[len(digits)-exp:], "0")
	s := whole
	if frac != "" {
		s += "." + frac
	}
	if neg {
		s = "-" + s
	}
	return s
}

// usd writes a quote amount (1e6) in dollars: two decimals (more for amounts below a cent),
// thousands grouped; signed puts "+" before gains.
func usd(a events.Amount, signed bool) string {
	v, err := a.Big()
	if err != nil {
		return string(a) + " (quote)"
	}
	sign := ""
	switch {
	case v.Sign() < 0:
		sign = "-"
	case signed && v.Sign() > 0:
		sign = "+"
	}
	abs := new(big.Int).Abs(v)
	if abs.Sign() > 0 && abs.Cmp(big.NewInt(10_000)) < 0 { // under a cent: exactly
		return sign + "$" + decimal(events.Amount(abs.String()), 6)
	}
	cents := new(big.Int).Add(abs, big.NewInt(5_000)) // round half up
	cents.Quo(cents, big.NewInt(10_000))
	digits := cents.String()
	if len(digits) < 3 {
		digits = strings.Repeat("0", 3-len(digits)) + digits
	}
	whole, frac := digits[:len(digits)-2], digits[len(digits)-2:]
	var g strings.Builder
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			g.WriteByte(',')
		}
		g.WriteRune(c)
	}
	return sign + "$" + g.String() + "." + frac
}

// fillPrice is a perp fill's price, quote (1e6) per base (1e9), in dollars.
func fillPrice(quote, base events.Amount) string {
	q, err1 := quote.Big()
	b, err2 := base.Big()
	if err1 != nil || err2 != nil || b.Sign() == 0 {
		return "an unknown price"
	}
	// Quote per base in price precision (1e6); under a dollar, every decimal counts.
	p := new(big.Int).Mul(q, big.NewInt(events.BasePrecision))
	p.Quo(p, b)
	if p.Cmp(big.NewInt(events.PricePrecision)) < 0 {
		return "$" + decimal(events.Amount(p.String()), 6)
	}
	return usd(events.Amount(p.String()), false)
}

// tokenDecimals is the precision of the spot tokens whose amounts a notification can write in
// tokens: the protocol's main spot markets. Others are named without an amount (the data has it).
func tokenDecimals(symbol string) (int, bool) {
	d, ok := map[string]int{
		"USDC": 6, "USDT": 6, "PYUSD": 6, "USDS": 6, "SOL": 9, "mSOL": 9, "jitoSOL": 9, "bSOL": 9, "INF": 9,
		"wBTC": 8, "wETH": 8, "cbBTC": 8, "JTO": 9, "JUP": 6, "PYTH": 6, "BONK": 5, "WIF": 6, "JLP": 6,
	}[symbol]
	return d, ok
}
