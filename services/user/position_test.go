package user_test

import (
	"math/big"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/services/user"
)

// TestPositionByHand follows one account's position in a market through a sequence worked out by
// hand: open, add, partial close, flip, close. Base is in 1e9, quote in 1e6; prices are round.
func TestPositionByHand(t *testing.T) {
	const b = 1_000_000_000 // one unit of base
	const q = 1_000_000     // one dollar
	steps := []struct {
		name        string
		direction   string
		base, quote int64
		// the position after the fill
		wantBase, wantQuote int64
		// what it closed: nil when it only opened or added
		closed *[3]int64 // baseClosed, existingBase, existingQuote
	}{
		{"open long 2 at 100", events.DirectionLong, 2 * b, 200 * q, 2 * b, -200 * q, nil},
		{"add 1 at 130", events.DirectionLong, 1 * b, 130 * q, 3 * b, -330 * q, nil},
		// The closed unit takes a third of the entry: 110.
		{"sell 1 at 150: partial close", events.DirectionShort, 1 * b, 150 * q, 2 * b, -220 * q, &[3]int64{-1 * b, 3 * b, -330 * q}},
		// Closes the 2 long and opens 1 short at the fill's price (120).
		{"sell 3 at 120: flip", events.DirectionShort, 3 * b, 360 * q, -1 * b, 120 * q, &[3]int64{-2 * b, 2 * b, -220 * q}},
		{"buy 1 at 90: close", events.DirectionLong, 1 * b, 90 * q, 0, 0, &[3]int64{1 * b, -1 * b, 120 * q}},
		{"open short 1 at 95 after flat", events.DirectionShort, 1 * b, 95 * q, -1 * b, 95 * q, nil},
	}
	p := user.NewPosition()
	for _, s := range steps {
		closed, err := p.Apply(s.direction, big.NewInt(s.base), big.NewInt(s.quote))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if p.Base.Int64() != s.wantBase || p.QuoteEntry.Int64() != s.wantQuote {
			t.Fatalf("%s: position %s / %s, want %d / %d", s.name, p.Base, p.QuoteEntry, s.wantBase, s.wantQuote)
		}
		switch {
		case s.closed == nil && closed != nil:
			t.Fatalf("%s: closed %+v, want nothing", s.name, closed)
		case s.closed != nil && closed == nil:
			t.Fatalf("%s: closed nothing", s.name)
		case s.closed != nil:
			got := [3]int64{closed.BaseClosed.Int64(), closed.ExistingBase.Int64(), closed.ExistingQuoteEntry.Int64()}
			if got != *s.closed {
				t.Fatalf("%s: closed %v, want %v", s.name, got, *s.closed)
			}
		}
	}
	if _, err := p.Apply("sideways", big.NewInt(1), big.NewInt(1)); err == nil {
		t.Error("a direction that is neither long nor short was applied")
	}
}
