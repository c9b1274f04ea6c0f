package records

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/events"
)

// Catalogue is the markets the mapping knows: their symbols and market filters by (type, index).
// Perp and spot markets have separate index spaces, so both are part of a market's identity. It
// is read-only once built and safe for concurrent use.
type Catalogue struct {
	markets map[marketKey]events.Market
}

type marketKey struct {
	typ   events.MarketType
	index int
}

// NewCatalogue builds a catalogue from the markets' accounts: the account's marketIndex, its name
// as the symbol (trailing spaces and NULs dropped, which is how the program pads names and how
// the API writes symbols: "SOL-PERP", "USDC") and the account's kind as the market type. The
// same market may come twice (dumps of one account at two times) when it keeps its name; two
// names for one market are refused, as records would carry one or the other by chance.
func NewCatalogue(perps []drift.PerpMarket, spots []drift.SpotMarket) (*Catalogue, error) {
	ms := make([]events.Market, 0, len(perps)+len(spots))
	for i := range perps {
		ms = append(ms, events.Market{Index: int(perps[i].MarketIndex), Symbol: drift.Name(perps[i].Name), Type: events.MarketTypePerp})
	}
	for i := range spots {
		ms = append(ms, events.Market{Index: int(spots[i].MarketIndex), Symbol: drift.Name(spots[i].Name), Type: events.MarketTypeSpot})
	}
	return CatalogueOf(ms...)
}

// CatalogueOf builds a catalogue from markets known otherwise, such as the simulator's.
func CatalogueOf(markets ...events.Market) (*Catalogue, error) {
	c := &Catalogue{markets: make(map[marketKey]events.Market, len(markets))}
	for _, m := range markets {
		if !m.Type.Valid() {
			return nil, fmt.Errorf("records: market %q: type %q is neither perp nor spot", m.Symbol, m.Type)
		}
		if m.Symbol == "" {
			return nil, fmt.Errorf("records: %s market %d has no name", m.Type, m.Index)
		}
		k := marketKey{m.Type, m.Index}
		if old, ok := c.markets[k]; ok && old.Symbol != m.Symbol {
			return nil, fmt.Errorf("records: %s market %d is named both %q and %q", m.Type, m.Index, old.Symbol, m.Symbol)
		}
		c.markets[k] = m
	}
	return c, nil
}

// ErrUnknownMarket is the refusal of an event of a market the catalogue lacks: a market listed
// after the catalogue was read, which reading the market accounts again brings in.
var ErrUnknownMarket = errors.New("is not in the catalogue")

// Market is the market of type t and index i, or an error naming the market when the catalogue
// does not have it: a record without its symbol would fail validation downstream, so the caller
// learns here which market account it lacks.
func (c *Catalogue) Market(t events.MarketType, i int) (events.Market, error) {
	if m, ok := c.markets[marketKey{t, i}]; ok {
		return m, nil
	}
	return events.Market{}, fmt.Errorf("%s market %d %w", t, i, ErrUnknownMarket)
}

// Markets lists the catalogue, perp markets first, each kind by index.
func (c *Catalogue) Markets() []events.Market {
	return slices.SortedFunc(maps.Values(c.markets), func(a, b events.Market) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Index, b.Index))
	})
}
