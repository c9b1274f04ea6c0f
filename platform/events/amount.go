package events

import (
	"fmt"
	"math/big"
	"strconv"
)

// Protocol precisions: an Amount is an integer count of 1/precision units. They are the protocol's own
// fixed-point scales, so an amount read from a record can be compared with on-chain values unchanged.
const (
	PricePrecision              = 1_000_000      // prices, oracle prices, TWAPs
	QuotePrecision              = 1_000_000      // quote (USDC) amounts, fees, P&L
	BasePrecision               = 1_000_000_000  // perp base amounts, LP shares
	FundingRatePrecision        = 1_000_000_000  // funding rates: quote per base
	SpotBalancePrecision        = 1_000_000_000  // scaled spot market balances
	SpotCumulativeInterestScale = 10_000_000_000 // cumulative deposit/borrow interest
	PercentagePrecision         = 1_000_000      // spreads, fee and weight percentages
)

// Amount is an integer decimal string in protocol precision, e.g. "1500000" is 1.5 quote. Strings keep
// u64/i128 protocol values exact end to end (JSON numbers would lose them past 2^53).
type Amount string

// NewAmount formats v as an Amount.
func NewAmount(v int64) Amount { return Amount(strconv.FormatInt(v, 10)) }

// Valid reports whether a is an optional '-' followed by digits without leading zeros ("0" itself is
// valid, "-0" is not).
func (a Amount) Valid() bool {
	s := string(a)
	if s != "" && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Int64 parses a; amounts beyond int64 return an error (use Big for those).
func (a Amount) Int64() (int64, error) {
	if !a.Valid() {
		return 0, fmt.Errorf("amount %q: not an integer string", string(a))
	}
	v, err := strconv.ParseInt(string(a), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q: %w", string(a), err)
	}
	return v, nil
}

// Big parses a of any size.
func (a Amount) Big() (*big.Int, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("amount %q: not an integer string", string(a))
	}
	v, _ := new(big.Int).SetString(string(a), 10)
	return v, nil
}

// validID reports whether s is an unsigned decimal integer without leading zeros: record ids and order
// ids are u64 on chain and travel as strings like amounts.
func validID(s string) bool { return s != "" && s[0] != '-' && Amount(s).Valid() }
