package records

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tidemark/tidemark/platform/chain/borsh"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

type unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}
type signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// Event to record: the event's integers are already in protocol precision, so each becomes the
// record's Amount digit for digit.

func uamt[T unsigned](v T) events.Amount { return events.Amount(strconv.FormatUint(uint64(v), 10)) }
func samt[T signed](v T) events.Amount   { return events.Amount(strconv.FormatInt(int64(v), 10)) }

// optU is an Option's value, or none when the event has no value there.
func optU[T unsigned](o borsh.Option[T], none events.Amount) events.Amount {
	if !o.Some {
		return none
	}
	return uamt(o.Value)
}

func optS[T signed](o borsh.Option[T], none events.Amount) events.Amount {
	if !o.Some {
		return none
	}
	return samt(o.Value)
}

// optID is an optional id as the record's id string, "" when none.
func optID[T unsigned](o borsh.Option[T]) string { return string(optU(o, "")) }

func id[T unsigned](v T) string { return string(uamt(v)) }

func optKey(o borsh.Option[solana.PublicKey]) string {
	if !o.Some {
		return ""
	}
	return o.Value.String()
}

// keyOrNone is a key the program writes as all zeros for "none" (a NewUserRecord's referrer).
func keyOrNone(k solana.PublicKey) string {
	if k.IsZero() {
		return ""
	}
	return k.String()
}

func optDirection(o borsh.Option[drift.PositionDirection]) (string, error) {
	if !o.Some {
		return "", nil
	}
	return enumName(directionNames[:], o.Value)
}

// tx is the record's place on chain: ts is the event's own (the program's clock, which the Data
// API keys its records by), the rest the transaction's.
func tx(ts int64, c Context) events.Tx {
	return events.Tx{Ts: ts, TxSig: c.TxSig, TxSigIndex: c.TxSigIndex, Slot: c.Slot}
}

func marketType(t drift.MarketType) (events.MarketType, error) {
	switch t {
	case drift.MarketTypePerp:
		return events.MarketTypePerp, nil
	case drift.MarketTypeSpot:
		return events.MarketTypeSpot, nil
	}
	return "", fmt.Errorf("market type %s", t)
}

func driftMarketType(t events.MarketType) (drift.MarketType, error) {
	switch t {
	case events.MarketTypePerp:
		return drift.MarketTypePerp, nil
	case events.MarketTypeSpot:
		return drift.MarketTypeSpot, nil
	}
	return 0, fmt.Errorf("market type %q is neither perp nor spot", t)
}

// Record to event: enc parses a record's strings back into the event's integers and keeps the
// first failure, named by its field, so that one error check follows a whole event's fields.
type enc struct {
	err error
	// zeroEmpty reads an empty required value as 0: for records whose type documents "" as a zero
	// left out (a Liquidation's other sub-records).
	zeroEmpty bool
}

var errEmpty = errors.New("is required")

func (e *enc) fail(name string, err error) {
	if e.err == nil {
		e.err = fmt.Errorf("%s: %w", name, err)
	}
}

// digits checks that s is an integer the record format allows and reports whether there is one.
func (e *enc) digits(name, s string) bool {
	switch {
	case s == "" && e.zeroEmpty:
		return false
	case s == "":
		e.fail(name, errEmpty)
		return false
	case !events.Amount(s).Valid():
		e.fail(name, fmt.Errorf("%q is not an integer", s))
		return false
	}
	return true
}

func uintOf[T unsigned](e *enc, name, s string) T {
	if !e.digits(name, s) {
		return 0
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err == nil && uint64(T(v)) != v {
		err = fmt.Errorf("%s does not fit the event's %T", s, T(0))
	}
	if err != nil {
		e.fail(name, err)
		return 0
	}
	return T(v)
}

func intOf[T signed](e *enc, name, s string) T {
	if !e.digits(name, s) {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err == nil && int64(T(v)) != v {
		err = fmt.Errorf("%s does not fit the event's %T", s, T(0))
	}
	if err != nil {
		e.fail(name, err)
		return 0
	}
	return T(v)
}

// optUint is None for "", the record's way of saying the event had no value.
func optUint[T unsigned](e *enc, name, s string) borsh.Option[T] {
	if s == "" {
		return borsh.Option[T]{}
	}
	return borsh.Some(uintOf[T](e, name, s))
}

func optInt[T signed](e *enc, name, s string) borsh.Option[T] {
	if s == "" {
		return borsh.Option[T]{}
	}
	return borsh.Some(intOf[T](e, name, s))
}

// small is an int field of a record (a market index, a count) as the event's narrower integer.
func small[T unsigned](e *enc, name string, v int) T {
	if v < 0 || uint64(T(v)) != uint64(v) {
		e.fail(name, fmt.Errorf("%d does not fit the event's %T", v, T(0)))
		return 0
	}
	return T(v)
}

func (e *enc) u128(name, s string) borsh.Uint128 {
	if !e.digits(name, s) {
		return borsh.Uint128{}
	}
	v, err := borsh.ParseUint128(s)
	if err != nil {
		e.fail(name, err)
	}
	return v
}

func (e *enc) i128(name, s string) borsh.Int128 {
	if !e.digits(name, s) {
		return borsh.Int128{}
	}
	v, err := borsh.ParseInt128(s)
	if err != nil {
		e.fail(name, err)
	}
	return v
}

func (e *enc) key(name, s string) solana.PublicKey {
	if s == "" {
		e.fail(name, errEmpty)
		return solana.PublicKey{}
	}
	k, err := solana.ParsePublicKey(s)
	if err != nil {
		e.fail(name, err)
	}
	return k
}

// keyOrZero is the all-zero key for "", the program's "no account".
func (e *enc) keyOrZero(name, s string) solana.PublicKey {
	if s == "" {
		return solana.PublicKey{}
	}
	return e.key(name, s)
}

func (e *enc) optKey(name, s string) borsh.Option[solana.PublicKey] {
	if s == "" {
		return borsh.Option[solana.PublicKey]{}
	}
	return borsh.Some(e.key(name, s))
}

func enumOf[E ~uint8](e *enc, name string, table []string, s string) E {
	for i, n := range table {
		if n == s && n != "" {
			return E(i)
		}
	}
	e.fail(name, fmt.Errorf("%q has no event variant", s))
	return 0
}

func optEnum[E ~uint8](e *enc, name string, table []string, s string) borsh.Option[E] {
	if s == "" {
		return borsh.Option[E]{}
	}
	return borsh.Some(enumOf[E](e, name, table, s))
}

// enumName is the record's name of an event variant; a variant the table lacks is an error, as
// the program has added variants before and a record must not carry a guess.
func enumName[E interface {
	~uint8
	fmt.Stringer
}](table []string, v E) (string, error) {
	if int(v) < len(table) && table[v] != "" {
		return table[v], nil
	}
	return "", fmt.Errorf("variant %s has no record name", v)
}
