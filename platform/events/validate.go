package events

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MinTs is the earliest accepted event time (2021-01-01T00:00:00Z); nothing of the protocol is older.
const MinTs int64 = 1609459200

// MaxClockSkew is how far past the validator's clock an event ts may lie before it is rejected.
const MaxClockSkew = 24 * time.Hour

// ValidationError lists every problem of one record, so that a dead-letter reason names all of them.
type ValidationError struct {
	EventType string
	Problems  []string
}

func (e *ValidationError) Error() string {
	return "invalid " + e.EventType + ": " + strings.Join(e.Problems, "; ")
}

// check collects the problems of one record.
type check struct {
	now      time.Time
	problems []string
}

func newCheck(now time.Time) *check { return &check{now: now} }

func (c *check) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func (c *check) err(eventType string) error {
	if len(c.problems) == 0 {
		return nil
	}
	return &ValidationError{EventType: eventType, Problems: c.problems}
}

func (c *check) ts(name string, ts int64) {
	if maxTs := c.now.Add(MaxClockSkew).Unix(); ts < MinTs || ts > maxTs {
		c.fail("%s %d outside [%d, %d]", name, ts, MinTs, maxTs)
	}
}

// tx checks the fields every transaction-borne record carries.
func (c *check) tx(t Tx) {
	c.ts("ts", t.Ts)
	c.str("txSig", t.TxSig)
	c.nonNeg("txSigIndex", int64(t.TxSigIndex))
	if t.Slot <= 0 {
		c.fail("slot %d must be positive", t.Slot)
	}
}

func (c *check) str(name, v string) {
	if v == "" {
		c.fail("%s is required", name)
	}
}

func (c *check) nonNeg(name string, v int64) {
	if v < 0 {
		c.fail("%s %d must not be negative", name, v)
	}
}

func (c *check) amount(name string, a Amount) {
	if a == "" {
		c.fail("%s is required", name)
	} else if !a.Valid() {
		c.fail("%s %q is not an integer amount", name, string(a))
	}
}

func (c *check) optAmount(name string, a Amount) {
	if a != "" && !a.Valid() {
		c.fail("%s %q is not an integer amount", name, string(a))
	}
}

func (c *check) id(name, v string) {
	if v == "" {
		c.fail("%s is required", name)
	} else if !validID(v) {
		c.fail("%s %q is not an unsigned integer", name, v)
	}
}

func (c *check) optID(name, v string) {
	if v != "" && !validID(v) {
		c.fail("%s %q is not an unsigned integer", name, v)
	}
}

func (c *check) enum(name, v string, allowed ...string) {
	if v == "" {
		c.fail("%s is required", name)
	} else if !slices.Contains(allowed, v) {
		c.fail("%s %q is not one of %s", name, v, strings.Join(allowed, "|"))
	}
}

func (c *check) optEnum(name, v string, allowed ...string) {
	if v != "" {
		c.enum(name, v, allowed...)
	}
}

// market checks a market type and, when the record names them, that symbol and marketFilter agree.
func (c *check) market(marketType MarketType, symbol, marketFilter string) {
	c.enum("marketType", string(marketType), string(MarketTypePerp), string(MarketTypeSpot))
	c.optEnum("marketFilter", marketFilter, FilterPerp, FilterSpot, FilterPrediction)
	if symbol != "" && marketFilter != "" && marketType.Valid() {
		if want := MarketFilter(marketType, symbol); marketFilter != want {
			c.fail("marketFilter %q does not match %s market %q (want %q)", marketFilter, marketType, symbol, want)
		}
	}
}
