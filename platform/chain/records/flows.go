package records

import (
	"errors"
	"fmt"
	"math"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Deposit maps a DepositRecord, rewards included: a reward is a deposit with explanation
// "reward" on protocol.deposits (the Data API's RewardRecord is the same fields). The symbol is the
// spot market's. Not in the record: transferUser, signer, userTokenAmountAfter.
func (m *Mapper) Deposit(ev *drift.DepositRecord, c Context) (*events.Deposit, error) {
	r, err := m.deposit(ev, c)
	return r, wrap("DepositRecord", err)
}

func (m *Mapper) deposit(ev *drift.DepositRecord, c Context) (*events.Deposit, error) {
	market, err := m.cat.Market(events.MarketTypeSpot, int(ev.MarketIndex))
	if err != nil {
		return nil, err
	}
	direction, err1 := enumName(depositDirectionNames[:], ev.Direction)
	explanation, err2 := enumName(depositExplanationNames[:], ev.Explanation)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &events.Deposit{
		Tx:                              tx(ev.TS, c),
		Amount:                          uamt(ev.Amount),
		OraclePrice:                     samt(ev.OraclePrice),
		MarketDepositBalance:            events.Amount(ev.MarketDepositBalance.String()),
		MarketWithdrawBalance:           events.Amount(ev.MarketWithdrawBalance.String()),
		MarketCumulativeDepositInterest: events.Amount(ev.MarketCumulativeDepositInterest.String()),
		MarketCumulativeBorrowInterest:  events.Amount(ev.MarketCumulativeBorrowInterest.String()),
		TotalDepositsAfter:              uamt(ev.TotalDepositsAfter),
		TotalWithdrawsAfter:             uamt(ev.TotalWithdrawsAfter),
		DepositRecordID:                 id(ev.DepositRecordID),
		UserAuthority:                   ev.UserAuthority.String(),
		User:                            ev.User.String(),
		Direction:                       direction,
		Explanation:                     explanation,
		MarketIndex:                     int(ev.MarketIndex),
		Symbol:                          market.Symbol,
	}, nil
}

// DepositEvent is the DepositRecord of a deposit record; transferUser and signer are None and
// userTokenAmountAfter 0, as the record does not keep them.
func DepositEvent(r *events.Deposit) (*drift.DepositRecord, error) {
	e := &enc{}
	ev := &drift.DepositRecord{
		TS:                              r.Ts,
		UserAuthority:                   e.key("userAuthority", r.UserAuthority),
		User:                            e.key("user", r.User),
		Direction:                       enumOf[drift.DepositDirection](e, "direction", depositDirectionNames[:], r.Direction),
		DepositRecordID:                 uintOf[uint64](e, "depositRecordId", r.DepositRecordID),
		Amount:                          uintOf[uint64](e, "amount", string(r.Amount)),
		MarketIndex:                     small[uint16](e, "marketIndex", r.MarketIndex),
		OraclePrice:                     intOf[int64](e, "oraclePrice", string(r.OraclePrice)),
		MarketDepositBalance:            e.u128("marketDepositBalance", string(r.MarketDepositBalance)),
		MarketWithdrawBalance:           e.u128("marketWithdrawBalance", string(r.MarketWithdrawBalance)),
		MarketCumulativeDepositInterest: e.u128("marketCumulativeDepositInterest", string(r.MarketCumulativeDepositInterest)),
		MarketCumulativeBorrowInterest:  e.u128("marketCumulativeBorrowInterest", string(r.MarketCumulativeBorrowInterest)),
		TotalDepositsAfter:              uintOf[uint64](e, "totalDepositsAfter", string(r.TotalDepositsAfter)),
		TotalWithdrawsAfter:             uintOf[uint64](e, "totalWithdrawsAfter", string(r.TotalWithdrawsAfter)),
		Explanation:                     enumOf[drift.DepositExplanation](e, "explanation", depositExplanationNames[:], r.Explanation),
	}
	return done("DepositRecord", e, ev)
}

// FundingRate maps a FundingRateRecord; the symbol is the perp market's.
func (m *Mapper) FundingRate(ev *drift.FundingRateRecord, c Context) (*events.FundingRate, error) {
	market, err := m.cat.Market(events.MarketTypePerp, int(ev.MarketIndex))
	if err != nil {
		return nil, wrap("FundingRateRecord", err)
	}
	return &events.FundingRate{
		Tx:                             tx(ev.TS, c),
		MarketIndex:                    int(ev.MarketIndex),
		RecordID:                       id(ev.RecordID),
		Symbol:                         market.Symbol,
		FundingRate:                    samt(ev.FundingRate),
		FundingRateLong:                events.Amount(ev.FundingRateLong.String()),
		FundingRateShort:               events.Amount(ev.FundingRateShort.String()),
		CumulativeFundingRateLong:      events.Amount(ev.CumulativeFundingRateLong.String()),
		CumulativeFundingRateShort:     events.Amount(ev.CumulativeFundingRateShort.String()),
		OraclePriceTwap:                samt(ev.OraclePriceTwap),
		MarkPriceTwap:                  uamt(ev.MarkPriceTwap),
		PeriodRevenue:                  samt(ev.PeriodRevenue),
		BaseAssetAmountWithAmm:         events.Amount(ev.BaseAssetAmountWithAmm.String()),
		BaseAssetAmountWithUnsettledLp: events.Amount(ev.BaseAssetAmountWithUnsettledLp.String()),
	}, nil
}

// FundingRateEvent is the FundingRateRecord of a funding rate record.
func FundingRateEvent(r *events.FundingRate) (*drift.FundingRateRecord, error) {
	e := &enc{}
	ev := &drift.FundingRateRecord{
		TS:                             r.Ts,
		RecordID:                       uintOf[uint64](e, "recordId", r.RecordID),
		MarketIndex:                    small[uint16](e, "marketIndex", r.MarketIndex),
		FundingRate:                    intOf[int64](e, "fundingRate", string(r.FundingRate)),
		FundingRateLong:                e.i128("fundingRateLong", string(r.FundingRateLong)),
		FundingRateShort:               e.i128("fundingRateShort", string(r.FundingRateShort)),
		CumulativeFundingRateLong:      e.i128("cumulativeFundingRateLong", string(r.CumulativeFundingRateLong)),
		CumulativeFundingRateShort:     e.i128("cumulativeFundingRateShort", string(r.CumulativeFundingRateShort)),
		OraclePriceTwap:                intOf[int64](e, "oraclePriceTwap", string(r.OraclePriceTwap)),
		MarkPriceTwap:                  uintOf[uint64](e, "markPriceTwap", string(r.MarkPriceTwap)),
		PeriodRevenue:                  intOf[int64](e, "periodRevenue", string(r.PeriodRevenue)),
		BaseAssetAmountWithAmm:         e.i128("baseAssetAmountWithAmm", string(r.BaseAssetAmountWithAmm)),
		BaseAssetAmountWithUnsettledLp: e.i128("baseAssetAmountWithUnsettledLp", string(r.BaseAssetAmountWithUnsettledLp)),
	}
	return done("FundingRateRecord", e, ev)
}

// FundingPayment maps a FundingPaymentRecord.
func FundingPayment(ev *drift.FundingPaymentRecord, c Context) *events.FundingPayment {
	return &events.FundingPayment{
		Tx:                        tx(ev.TS, c),
		UserAuthority:             ev.UserAuthority.String(),
		User:                      ev.User.String(),
		MarketIndex:               int(ev.MarketIndex),
		FundingPayment:            samt(ev.FundingPayment),
		BaseAssetAmount:           samt(ev.BaseAssetAmount),
		UserLastCumulativeFunding: samt(ev.UserLastCumulativeFunding),
		AmmCumulativeFundingLong:  events.Amount(ev.AmmCumulativeFundingLong.String()),
		AmmCumulativeFundingShort: events.Amount(ev.AmmCumulativeFundingShort.String()),
	}
}

// FundingPaymentEvent is the FundingPaymentRecord of a funding payment record.
func FundingPaymentEvent(r *events.FundingPayment) (*drift.FundingPaymentRecord, error) {
	e := &enc{}
	ev := &drift.FundingPaymentRecord{
		TS:                        r.Ts,
		UserAuthority:             e.key("userAuthority", r.UserAuthority),
		User:                      e.key("user", r.User),
		MarketIndex:               small[uint16](e, "marketIndex", r.MarketIndex),
		FundingPayment:            intOf[int64](e, "fundingPayment", string(r.FundingPayment)),
		BaseAssetAmount:           intOf[int64](e, "baseAssetAmount", string(r.BaseAssetAmount)),
		UserLastCumulativeFunding: intOf[int64](e, "userLastCumulativeFunding", string(r.UserLastCumulativeFunding)),
		AmmCumulativeFundingLong:  e.i128("ammCumulativeFundingLong", string(r.AmmCumulativeFundingLong)),
		AmmCumulativeFundingShort: e.i128("ammCumulativeFundingShort", string(r.AmmCumulativeFundingShort)),
	}
	return done("FundingPaymentRecord", e, ev)
}

// Swap maps a SwapRecord; both symbols are spot markets'.
func (m *Mapper) Swap(ev *drift.SwapRecord, c Context) (*events.Swap, error) {
	in, err1 := m.cat.Market(events.MarketTypeSpot, int(ev.InMarketIndex))
	out, err2 := m.cat.Market(events.MarketTypeSpot, int(ev.OutMarketIndex))
	if err := errors.Join(err1, err2); err != nil {
		return nil, wrap("SwapRecord", err)
	}
	return &events.Swap{
		Tx:             tx(ev.TS, c),
		User:           ev.User.String(),
		OutMarketIndex: int(ev.OutMarketIndex),
		InMarketIndex:  int(ev.InMarketIndex),
		AmountOut:      uamt(ev.AmountOut),
		AmountIn:       uamt(ev.AmountIn),
		OutOraclePrice: samt(ev.OutOraclePrice),
		InOraclePrice:  samt(ev.InOraclePrice),
		Fee:            uamt(ev.Fee),
		InSymbol:       in.Symbol,
		OutSymbol:      out.Symbol,
	}, nil
}

// SwapEvent is the SwapRecord of a swap record.
func SwapEvent(r *events.Swap) (*drift.SwapRecord, error) {
	e := &enc{}
	ev := &drift.SwapRecord{
		TS:             r.Ts,
		User:           e.key("user", r.User),
		AmountOut:      uintOf[uint64](e, "amountOut", string(r.AmountOut)),
		AmountIn:       uintOf[uint64](e, "amountIn", string(r.AmountIn)),
		OutMarketIndex: small[uint16](e, "outMarketIndex", r.OutMarketIndex),
		InMarketIndex:  small[uint16](e, "inMarketIndex", r.InMarketIndex),
		OutOraclePrice: intOf[int64](e, "outOraclePrice", string(r.OutOraclePrice)),
		InOraclePrice:  intOf[int64](e, "inOraclePrice", string(r.InOraclePrice)),
		Fee:            uintOf[uint64](e, "fee", string(r.Fee)),
	}
	return done("SwapRecord", e, ev)
}

// SettlePnl maps a SettlePnlRecord.
func SettlePnl(ev *drift.SettlePnlRecord, c Context) (*events.SettlePnl, error) {
	explanation, err := enumName(settlePnlExplanationNames[:], ev.Explanation)
	if err != nil {
		return nil, wrap("SettlePnlRecord", err)
	}
	return &events.SettlePnl{
		Tx:                    tx(ev.TS, c),
		User:                  ev.User.String(),
		MarketIndex:           int(ev.MarketIndex),
		Pnl:                   events.Amount(ev.Pnl.String()),
		BaseAssetAmount:       samt(ev.BaseAssetAmount),
		QuoteAssetAmountAfter: samt(ev.QuoteAssetAmountAfter),
		QuoteEntryAmount:      samt(ev.QuoteEntryAmount),
		SettlePrice:           samt(ev.SettlePrice),
		Explanation:           explanation,
	}, nil
}

// SettlePnlEvent is the SettlePnlRecord of a settle P&L record.
func SettlePnlEvent(r *events.SettlePnl) (*drift.SettlePnlRecord, error) {
	e := &enc{}
	ev := &drift.SettlePnlRecord{
		TS:                    r.Ts,
		User:                  e.key("user", r.User),
		MarketIndex:           small[uint16](e, "marketIndex", r.MarketIndex),
		Pnl:                   e.i128("pnl", string(r.Pnl)),
		BaseAssetAmount:       intOf[int64](e, "baseAssetAmount", string(r.BaseAssetAmount)),
		QuoteAssetAmountAfter: intOf[int64](e, "quoteAssetAmountAfter", string(r.QuoteAssetAmountAfter)),
		QuoteEntryAmount:      intOf[int64](e, "quoteEntryAmount", string(r.QuoteEntryAmount)),
		SettlePrice:           intOf[int64](e, "settlePrice", string(r.SettlePrice)),
		Explanation:           enumOf[drift.SettlePnlExplanation](e, "explanation", settlePnlExplanationNames[:], r.Explanation),
	}
	return done("SettlePnlRecord", e, ev)
}

// PerpLP maps an LPRecord.
func PerpLP(ev *drift.LPRecord, c Context) (*events.PerpLP, error) {
	action, err := enumName(lpActionNames[:], ev.Action)
	if err != nil {
		return nil, wrap("LPRecord", err)
	}
	return &events.PerpLP{
		Tx:                    tx(ev.TS, c),
		User:                  ev.User.String(),
		Action:                action,
		MarketIndex:           int(ev.MarketIndex),
		NShares:               uamt(ev.NShares),
		DeltaBaseAssetAmount:  samt(ev.DeltaBaseAssetAmount),
		DeltaQuoteAssetAmount: samt(ev.DeltaQuoteAssetAmount),
		Pnl:                   samt(ev.Pnl),
	}, nil
}

// PerpLPEvent is the LPRecord of a perp LP record.
func PerpLPEvent(r *events.PerpLP) (*drift.LPRecord, error) {
	e := &enc{}
	ev := &drift.LPRecord{
		TS:                    r.Ts,
		User:                  e.key("user", r.User),
		Action:                enumOf[drift.LPAction](e, "action", lpActionNames[:], r.Action),
		NShares:               uintOf[uint64](e, "nShares", string(r.NShares)),
		MarketIndex:           small[uint16](e, "marketIndex", r.MarketIndex),
		DeltaBaseAssetAmount:  intOf[int64](e, "deltaBaseAssetAmount", string(r.DeltaBaseAssetAmount)),
		DeltaQuoteAssetAmount: intOf[int64](e, "deltaQuoteAssetAmount", string(r.DeltaQuoteAssetAmount)),
		Pnl:                   intOf[int64](e, "pnl", string(r.Pnl)),
	}
	return done("LPRecord", e, ev)
}

// InsuranceFund maps an InsuranceFundRecord; the symbol is the spot market's. The IF factors are
// u32 on chain and plain numbers in the record.
func (m *Mapper) InsuranceFund(ev *drift.InsuranceFundRecord, c Context) (*events.InsuranceFund, error) {
	market, err := m.cat.Market(events.MarketTypeSpot, int(ev.SpotMarketIndex))
	if err != nil {
		return nil, wrap("InsuranceFundRecord", err)
	}
	return &events.InsuranceFund{
		Tx:                         tx(ev.TS, c),
		SpotMarketIndex:            int(ev.SpotMarketIndex),
		PerpMarketIndex:            int(ev.PerpMarketIndex),
		UserIfFactor:               float64(ev.UserIfFactor),
		TotalIfFactor:              float64(ev.TotalIfFactor),
		Symbol:                     market.Symbol,
		VaultAmountBefore:          uamt(ev.VaultAmountBefore),
		InsuranceVaultAmountBefore: uamt(ev.InsuranceVaultAmountBefore),
		TotalIfSharesBefore:        events.Amount(ev.TotalIfSharesBefore.String()),
		TotalIfSharesAfter:         events.Amount(ev.TotalIfSharesAfter.String()),
		Amount:                     samt(ev.Amount),
	}, nil
}

// InsuranceFundEvent is the InsuranceFundRecord of an insurance fund record; its IF factors must
// be whole numbers that fit a u32.
func InsuranceFundEvent(r *events.InsuranceFund) (*drift.InsuranceFundRecord, error) {
	e := &enc{}
	factor := func(name string, v float64) uint32 {
		if v < 0 || v > math.MaxUint32 || v != math.Trunc(v) {
			e.fail(name, fmt.Errorf("%v is not a u32", v))
			return 0
		}
		return uint32(v)
	}
	ev := &drift.InsuranceFundRecord{
		TS:                         r.Ts,
		SpotMarketIndex:            small[uint16](e, "spotMarketIndex", r.SpotMarketIndex),
		PerpMarketIndex:            small[uint16](e, "perpMarketIndex", r.PerpMarketIndex),
		UserIfFactor:               factor("userIfFactor", r.UserIfFactor),
		TotalIfFactor:              factor("totalIfFactor", r.TotalIfFactor),
		VaultAmountBefore:          uintOf[uint64](e, "vaultAmountBefore", string(r.VaultAmountBefore)),
		InsuranceVaultAmountBefore: uintOf[uint64](e, "insuranceVaultAmountBefore", string(r.InsuranceVaultAmountBefore)),
		TotalIfSharesBefore:        e.u128("totalIfSharesBefore", string(r.TotalIfSharesBefore)),
		TotalIfSharesAfter:         e.u128("totalIfSharesAfter", string(r.TotalIfSharesAfter)),
		Amount:                     intOf[int64](e, "amount", string(r.Amount)),
	}
	return done("InsuranceFundRecord", e, ev)
}

// IFStake maps an InsuranceFundStakeRecord; the symbol is the spot market's.
func (m *Mapper) IFStake(ev *drift.InsuranceFundStakeRecord, c Context) (*events.IFStake, error) {
	r, err := m.ifStake(ev, c)
	return r, wrap("InsuranceFundStakeRecord", err)
}

func (m *Mapper) ifStake(ev *drift.InsuranceFundStakeRecord, c Context) (*events.IFStake, error) {
	market, err := m.cat.Market(events.MarketTypeSpot, int(ev.MarketIndex))
	if err != nil {
		return nil, err
	}
	action, err := enumName(stakeActionNames[:], ev.Action)
	if err != nil {
		return nil, err
	}
	return &events.IFStake{
		Tx:                         tx(ev.TS, c),
		MarketIndex:                int(ev.MarketIndex),
		Amount:                     uamt(ev.Amount),
		UserAuthority:              ev.UserAuthority.String(),
		Action:                     action,
		IfSharesBefore:             events.Amount(ev.IfSharesBefore.String()),
		UserIfSharesBefore:         events.Amount(ev.UserIfSharesBefore.String()),
		TotalIfSharesBefore:        events.Amount(ev.TotalIfSharesBefore.String()),
		IfSharesAfter:              events.Amount(ev.IfSharesAfter.String()),
		UserIfSharesAfter:          events.Amount(ev.UserIfSharesAfter.String()),
		TotalIfSharesAfter:         events.Amount(ev.TotalIfSharesAfter.String()),
		InsuranceVaultAmountBefore: uamt(ev.InsuranceVaultAmountBefore),
		Symbol:                     market.Symbol,
	}, nil
}

// IFStakeEvent is the InsuranceFundStakeRecord of a stake record.
func IFStakeEvent(r *events.IFStake) (*drift.InsuranceFundStakeRecord, error) {
	e := &enc{}
	ev := &drift.InsuranceFundStakeRecord{
		TS:                         r.Ts,
		UserAuthority:              e.key("userAuthority", r.UserAuthority),
		Action:                     enumOf[drift.StakeAction](e, "action", stakeActionNames[:], r.Action),
		Amount:                     uintOf[uint64](e, "amount", string(r.Amount)),
		MarketIndex:                small[uint16](e, "marketIndex", r.MarketIndex),
		InsuranceVaultAmountBefore: uintOf[uint64](e, "insuranceVaultAmountBefore", string(r.InsuranceVaultAmountBefore)),
		IfSharesBefore:             e.u128("ifSharesBefore", string(r.IfSharesBefore)),
		UserIfSharesBefore:         e.u128("userIfSharesBefore", string(r.UserIfSharesBefore)),
		TotalIfSharesBefore:        e.u128("totalIfSharesBefore", string(r.TotalIfSharesBefore)),
		IfSharesAfter:              e.u128("ifSharesAfter", string(r.IfSharesAfter)),
		UserIfSharesAfter:          e.u128("userIfSharesAfter", string(r.UserIfSharesAfter)),
		TotalIfSharesAfter:         e.u128("totalIfSharesAfter", string(r.TotalIfSharesAfter)),
	}
	return done("InsuranceFundStakeRecord", e, ev)
}

// LPMintRedeem maps an LPMintRedeemRecord. The event's own slot is the transaction's, so the
// record's slot is the context's like every other record's.
func LPMintRedeem(ev *drift.LPMintRedeemRecord, c Context) *events.LPMintRedeem {
	return &events.LPMintRedeem{
		Tx:                    tx(ev.TS, c),
		SpotMarketIndex:       int(ev.SpotMarketIndex),
		ConstituentIndex:      int(ev.ConstituentIndex),
		LastAumSlot:           int64(ev.LastAumSlot),
		Description:           int(ev.Description),
		Authority:             ev.Authority.String(),
		Amount:                events.Amount(ev.Amount.String()),
		Fee:                   events.Amount(ev.Fee.String()),
		OraclePrice:           samt(ev.OraclePrice),
		Mint:                  ev.Mint.String(),
		LpAmount:              uamt(ev.LpAmount),
		LpFee:                 samt(ev.LpFee),
		LpPrice:               events.Amount(ev.LpPrice.String()),
		MintRedeemID:          id(ev.MintRedeemID),
		LastAum:               events.Amount(ev.LastAum.String()),
		InMarketCurrentWeight: samt(ev.InMarketCurrentWeight),
		InMarketTargetWeight:  samt(ev.InMarketTargetWeight),
		LpPool:                ev.LpPool.String(),
	}
}

// LPMintRedeemEvent is the LPMintRedeemRecord of an LP mint/redeem record.
func LPMintRedeemEvent(r *events.LPMintRedeem) (*drift.LPMintRedeemRecord, error) {
	e := &enc{}
	if r.Slot < 0 || r.LastAumSlot < 0 {
		e.fail("slot", errors.New("negative"))
	}
	ev := &drift.LPMintRedeemRecord{
		TS:                    r.Ts,
		Slot:                  uint64(r.Slot),
		Authority:             e.key("authority", r.Authority),
		Description:           small[uint8](e, "description", r.Description),
		Amount:                e.u128("amount", string(r.Amount)),
		Fee:                   e.i128("fee", string(r.Fee)),
		SpotMarketIndex:       small[uint16](e, "spotMarketIndex", r.SpotMarketIndex),
		ConstituentIndex:      small[uint16](e, "constituentIndex", r.ConstituentIndex),
		OraclePrice:           intOf[int64](e, "oraclePrice", string(r.OraclePrice)),
		Mint:                  e.key("mint", r.Mint),
		LpAmount:              uintOf[uint64](e, "lpAmount", string(r.LpAmount)),
		LpFee:                 intOf[int64](e, "lpFee", string(r.LpFee)),
		LpPrice:               e.u128("lpPrice", string(r.LpPrice)),
		MintRedeemID:          uintOf[uint64](e, "mintRedeemId", r.MintRedeemID),
		LastAum:               e.u128("lastAum", string(r.LastAum)),
		LastAumSlot:           uint64(r.LastAumSlot),
		InMarketCurrentWeight: intOf[int64](e, "inMarketCurrentWeight", string(r.InMarketCurrentWeight)),
		InMarketTargetWeight:  intOf[int64](e, "inMarketTargetWeight", string(r.InMarketTargetWeight)),
		LpPool:                e.key("lpPool", r.LpPool),
	}
	return done("LPMintRedeemRecord", e, ev)
}

// NewUser maps a NewUserRecord: the name as text (padding dropped), the referrer's authority
// empty when the program wrote the zero key for none. Delegates and builder accounts are account
// state, not in the event.
func NewUser(ev *drift.NewUserRecord, c Context) *events.NewUser {
	return &events.NewUser{
		Tx:            tx(ev.TS, c),
		UserAuthority: ev.UserAuthority.String(),
		User:          ev.User.String(),
		SubAccountID:  int(ev.SubAccountID),
		Name:          drift.Name(ev.Name),
		Referrer:      keyOrNone(ev.Referrer),
	}
}

// NewUserEvent is the NewUserRecord of a new user record; the name is padded with spaces as the
// program pads it.
func NewUserEvent(r *events.NewUser) (*drift.NewUserRecord, error) {
	e := &enc{}
	ev := &drift.NewUserRecord{
		TS:            r.Ts,
		UserAuthority: e.key("userAuthority", r.UserAuthority),
		User:          e.key("user", r.User),
		SubAccountID:  small[uint16](e, "subAccountId", r.SubAccountID),
		Referrer:      e.keyOrZero("referrer", r.Referrer),
	}
	if len(r.Name) > len(ev.Name) {
		e.fail("name", fmt.Errorf("%d bytes, more than %d", len(r.Name), len(ev.Name)))
	}
	n := copy(ev.Name[:], r.Name)
	for i := n; i < len(ev.Name); i++ {
		ev.Name[i] = ' '
	}
	return done("NewUserRecord", e, ev)
}

// done ends a record-to-event mapping: the event, or the first field that did not fit.
func done[T any](event string, e *enc, ev *T) (*T, error) {
	if e.err != nil {
		return nil, wrap(event, e.err)
	}
	return ev, nil
}
