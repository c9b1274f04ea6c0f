package user

import (
	"fmt"
	"math/big"

	"github.com/tidemark/tidemark/platform/events"
)

// Position is an account's perp position in one market: Base signed in base precision (1e9; long
// positive), QuoteEntry the quote paid to open it, signed the other way (quote 1e6; a long's is
// negative), as the protocol keeps them.
type Position struct {
	Base       *big.Int
	QuoteEntry *big.Int
}

// NewPosition is a flat position.
func NewPosition() Position { return Position{Base: new(big.Int), QuoteEntry: new(big.Int)} }

// Closed is what a fill that reduced, closed or flipped a position closed, and the position before it.
type Closed struct {
	// BaseClosed is the base amount that closed existing exposure, with the sign of the fill's base
	// change for the account (closing a long is negative).
	BaseClosed *big.Int
	// ExistingBase and ExistingQuoteEntry are the position before the fill.
	ExistingBase, ExistingQuoteEntry *big.Int
}

// Apply moves p by a fill of base (> 0, base precision) for quote (> 0, quote 1e6) in direction
// (long buys base and pays quote). It returns what the fill closed, nil when it only opened or added.
//
// Reducing keeps the average entry: the closed part takes the entry's share of the closed base
// (truncated toward zero), the rest stays. A fill larger than the position closes it and opens the
// other way with the remaining base and the matching share of the fill's quote.
func (p *Position) Apply(direction string, base, quote *big.Int) (*Closed, error) {
	if base.Sign() <= 0 || quote.Sign() < 0 {
		return nil, fmt.Errorf("fill of %s base for %s quote", base, quote)
	}
	sign := 1
	switch direction {
	case events.DirectionLong:
	case events.DirectionShort:
		sign = -1
	default:
		return nil, fmt.Errorf("direction %q", direction)
	}
	dBase := new(big.Int).Mul(base, big.NewInt(int64(sign)))
	dQuote := new(big.Int).Mul(quote, big.NewInt(int64(-sign)))
	if p.Base.Sign() == 0 || p.Base.Sign() == sign {
		p.Base.Add(p.Base, dBase)
		p.QuoteEntry.Add(p.QuoteEntry, dQuote)
		return nil, nil
	}
	c := &Closed{ExistingBase: new(big.Int).Set(p.Base), ExistingQuoteEntry: new(big.Int).Set(p.QuoteEntry)}
	size := new(big.Int).Abs(p.Base)
	closed := new(big.Int).Set(base)
	if closed.Cmp(size) > 0 {
		closed.Set(size)
	}
	c.BaseClosed = new(big.Int).Mul(closed, big.NewInt(int64(sign)))
	if closed.Cmp(size) == 0 {
		p.Base.SetInt64(0)
		p.QuoteEntry.SetInt64(0)
	} else {
		entryClosed := new(big.Int).Quo(new(big.Int).Mul(p.QuoteEntry, closed), size)
		p.Base.Add(p.Base, c.BaseClosed)
		p.QuoteEntry.Sub(p.QuoteEntry, entryClosed)
	}
	if rest := new(big.Int).Sub(base, closed); rest.Sign() > 0 {
		// Flipped: the rest of the fill opens the other way at the fill's price.
		p.Base.Mul(rest, big.NewInt(int64(sign)))
		p.QuoteEntry.Quo(new(big.Int).Mul(dQuote, rest), base)
	}
	return c, nil
}
