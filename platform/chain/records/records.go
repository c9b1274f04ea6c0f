// Package records maps the Drift program's events to the topic records of platform/events, as the
// services consume them and as the protocol's Data API derives them, and maps those records back
// to events, so that the simulator can emit the bytes the program would.
//
// Each event becomes at most one record: an OrderActionRecord a fill (protocol.fills) when its
// action is fill and an order action (protocol.order-actions) otherwise, an OrderRecord an order
// as placed, a DepositRecord a deposit (rewards included, as explanation "reward"), and so on for
// funding, liquidations, swaps, settlements, LP, insurance fund, stakes, LP mint/redeem and new
// users. Events no topic carries (SpotInterestRecord, CurveRecord, SignedMsgOrderRecord, ...) map
// to nothing. Market states (protocol.market-states) come from the market accounts, not events:
// Mapper.PerpMarketState and SpotMarketState, from an account alone; having no event bytes, they
// have no reverse.
//
// Amounts keep the event's integers: the program already writes them in the precisions the records
// document (price 1e6, quote 1e6, perp base 1e9, funding 1e9, spot amounts in token precision).
// Symbols and market filters come from a Catalogue built from the market accounts.
package records

import (
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Context is where an event was emitted: its transaction's signature and slot, and TxSigIndex, the
// event's index among the transaction's Drift events as the Data API counts them (see
// chain-facts: vault events first). A record's ts is the event's own ts, not the block time: that
// is what the Data API keys records by, and a block's time can be missing or a second off.
type Context struct {
	TxSig      string
	TxSigIndex int
	Slot       int64
}

// ContextOf is the context a record names: the inverse of what Map puts in the record's Tx.
func ContextOf(t events.Tx) Context {
	return Context{TxSig: t.TxSig, TxSigIndex: t.TxSigIndex, Slot: t.Slot}
}

// Mapped is a record and the topic it belongs on.
type Mapped struct {
	Topic  string
	Record events.Record
}

// Mapper maps events to records with the symbols of its catalogue.
type Mapper struct {
	cat *Catalogue
}

// New returns a Mapper that names markets from cat.
func New(cat *Catalogue) *Mapper { return &Mapper{cat: cat} }

// Map maps one event. ok is false for events no topic carries; an error means the event cannot
// become a valid record (a market the catalogue lacks, a variant the records have no name for).
func (m *Mapper) Map(ev drift.Event, c Context) (rec Mapped, ok bool, err error) {
	var r events.Record
	var topic string
	switch ev := ev.(type) {
	case *drift.OrderActionRecord:
		f, err := m.Fill(ev, c)
		if err != nil {
			return Mapped{}, false, err
		}
		r, topic = f, events.TopicOrderActions
		if f.Action == events.ActionFill {
			topic = events.TopicFills
		}
	case *drift.OrderRecord:
		r, err = nonNil(m.Order(ev, c))
		topic = events.TopicOrders
	case *drift.LiquidationRecord:
		r, err = nonNil(Liquidation(ev, c))
		topic = events.TopicLiquidations
	case *drift.DepositRecord:
		r, err = nonNil(m.Deposit(ev, c))
		topic = events.TopicDeposits
	case *drift.FundingRateRecord:
		r, err = nonNil(m.FundingRate(ev, c))
		topic = events.TopicFundingRates
	case *drift.FundingPaymentRecord:
		r, topic = FundingPayment(ev, c), events.TopicFundingPayments
	case *drift.SwapRecord:
		r, err = nonNil(m.Swap(ev, c))
		topic = events.TopicSwaps
	case *drift.SettlePnlRecord:
		r, err = nonNil(SettlePnl(ev, c))
		topic = events.TopicSettlePnl
	case *drift.LPRecord:
		r, err = nonNil(PerpLP(ev, c))
		topic = events.TopicLP
	case *drift.InsuranceFundRecord:
		r, err = nonNil(m.InsuranceFund(ev, c))
		topic = events.TopicInsuranceFund
	case *drift.InsuranceFundStakeRecord:
		r, err = nonNil(m.IFStake(ev, c))
		topic = events.TopicIFStakes
	case *drift.LPMintRedeemRecord:
		r, topic = LPMintRedeem(ev, c), events.TopicLPMintRedeem
	case *drift.NewUserRecord:
		r, topic = NewUser(ev, c), events.TopicNewUsers
	default:
		return Mapped{}, false, nil
	}
	if err != nil {
		return Mapped{}, false, err
	}
	return Mapped{Topic: topic, Record: r}, true, nil
}

// Event maps a record back to the event the program emits for it, in today's layout. Fields an
// event has and the record lacks are zero or None (see each type's mapping); fields a record has
// and no event carries are dropped.
func Event(r events.Record) (drift.Event, error) {
	switch r := r.(type) {
	case *events.Fill:
		return event(OrderActionEvent(r))
	case *events.Order:
		return event(OrderEvent(r))
	case *events.Liquidation:
		return event(LiquidationEvent(r))
	case *events.Deposit:
		return event(DepositEvent(r))
	case *events.FundingRate:
		return event(FundingRateEvent(r))
	case *events.FundingPayment:
		return event(FundingPaymentEvent(r))
	case *events.Swap:
		return event(SwapEvent(r))
	case *events.SettlePnl:
		return event(SettlePnlEvent(r))
	case *events.PerpLP:
		return event(PerpLPEvent(r))
	case *events.InsuranceFund:
		return event(InsuranceFundEvent(r))
	case *events.IFStake:
		return event(IFStakeEvent(r))
	case *events.LPMintRedeem:
		return event(LPMintRedeemEvent(r))
	case *events.NewUser:
		return event(NewUserEvent(r))
	}
	return nil, fmt.Errorf("records: no event for %T records", r)
}

// nonNil turns a typed mapping's result into a Record without the trap of a nil pointer in a
// non-nil interface.
func nonNil[T events.Record](r T, err error) (events.Record, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

// event is nonNil's counterpart for events.
func event[T drift.Event](e T, err error) (drift.Event, error) {
	if err != nil {
		return nil, err
	}
	return e, nil
}

// wrap names the event a mapping failed for.
func wrap(event string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("records: %s: %w", event, err)
}
