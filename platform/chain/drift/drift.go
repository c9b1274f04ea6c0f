// Package drift is the Drift protocol's on-chain data as Go values: its events and the accounts
// tidemark reads (State, PerpMarket, SpotMarket, User, UserStats), decoded and encoded exactly as
// the program lays them out.
//
// The types, decoders and encoders are generated from the program's Anchor IDL, idl.json, by
// tools/cmd/chaingen (make generate): the zz_generated files are never edited by hand, and the next
// program version is a new idl.json and a regeneration.
//
// Events keep their history: the program has only ever appended fields to an event, so an event
// emitted by an older version is a prefix of today's layout. A buffer that ends exactly after one
// of its fields decodes, with the remaining fields absent (zero, and counted in the event's Absent
// field); a buffer that ends inside a field, has bytes after the last field, or holds a value a
// field cannot take is refused with a *DecodeError naming the event, the field and the offset.
// Accounts are zero-copy structs whose size does not change: their data must be exactly the size
// the IDL gives.
//
// Numbers keep their IDL widths; u128 and i128 are borsh.Uint128 and borsh.Int128, Option<T> is
// borsh.Option[T], enums are named uint8 types whose String is the IDL variant name, and [u8; N]
// stays a byte array (see Name for the 32-byte names).
package drift

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/borsh"
)

// ProgramID is the Drift program's address on mainnet-beta and devnet.
const ProgramID = "dRiftyHA39MWEi3m9aunc5MzRF1JYuBsbn6VPcn33UH"

// Event is one of the program's events.
type Event interface {
	// EventName is the event's IDL name.
	EventName() string
	// Discriminator is the event's first eight bytes.
	Discriminator() anchor.Discriminator
	// FieldsPresent is the number of fields the event had when emitted.
	FieldsPresent() int
	encoding.BinaryUnmarshaler
	encoding.BinaryMarshaler
	encoding.BinaryAppender
}

// ErrUnknownEvent is the error of DecodeEvent for data whose discriminator is no event of the
// IDL: the log lines of other programs, and the text of msg! lines that happens to be base64.
const ErrUnknownEvent = borsh.Error("unknown event discriminator")

// DecodeEvent decodes an event's bytes (a log line's base64 payload, decoded), whatever the event.
func DecodeEvent(data []byte) (Event, error) {
	if len(data) < anchor.DiscriminatorSize {
		return nil, &DecodeError{Type: "event", Offset: len(data), Err: borsh.ErrEnd}
	}
	e := newEvent(binary.LittleEndian.Uint64(data))
	if e == nil {
		return nil, &DecodeError{Type: "event", Offset: 0, Err: fmt.Errorf("%w %x", ErrUnknownEvent, data[:anchor.DiscriminatorSize])}
	}
	if err := e.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return e, nil
}

// DecodeError is a refusal to decode an event or an account.
type DecodeError struct {
	Type   string // the event or account, "event" when the discriminator is no known event
	Field  string // the IDL name of the top-level field that failed, "" for the discriminator and trailing bytes
	Offset int    // where the failed value starts in the data, discriminator included
	Err    error  // what is wrong: a borsh.Error, ErrUnknownEvent, or a wrong discriminator
}

func (e *DecodeError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("drift: decode %s: field %s at offset %d: %v", e.Type, e.Field, e.Offset, e.Err)
	}
	return fmt.Sprintf("drift: decode %s at offset %d: %v", e.Type, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// errDiscriminator is the refusal of data whose discriminator is not the type's.
const errDiscriminator = borsh.Error("wrong discriminator")

// begin checks data's discriminator against disc (its first eight bytes, little-endian) and sets
// d to read the fields after it.
func begin(d *borsh.Decoder, data []byte, name string, disc uint64) error {
	if len(data) < anchor.DiscriminatorSize {
		return &DecodeError{Type: name, Offset: len(data), Err: borsh.ErrEnd}
	}
	if got := binary.LittleEndian.Uint64(data); got != disc {
		return &DecodeError{Type: name, Err: fmt.Errorf("%w %x", errDiscriminator, data[:anchor.DiscriminatorSize])}
	}
	d.Reset(data, anchor.DiscriminatorSize)
	return nil
}

// endEvent ends the decoding of an event of total fields after its first n: the number of fields
// absent, or the failure of the field named field, or trailing bytes after the last field.
func endEvent(d *borsh.Decoder, name, field string, n, total int) (int, error) {
	if err := d.Err(); err != nil {
		return 0, &DecodeError{Type: name, Field: field, Offset: d.ErrOffset(), Err: err}
	}
	if n == total && d.Len() > 0 {
		return 0, &DecodeError{Type: name, Offset: d.Offset(), Err: fmt.Errorf("%w: %d", borsh.ErrTrailing, d.Len())}
	}
	return total - n, nil
}

// endAccount ends the decoding of an account: the failure, named by fieldAt, or trailing bytes.
func endAccount(d *borsh.Decoder, name string, fieldAt func(int) string) error {
	if err := d.Err(); err != nil {
		return &DecodeError{Type: name, Field: fieldAt(d.ErrOffset()), Offset: d.ErrOffset(), Err: err}
	}
	if d.Len() > 0 {
		return &DecodeError{Type: name, Offset: d.Offset(), Err: fmt.Errorf("%w: %d", borsh.ErrTrailing, d.Len())}
	}
	return nil
}

// absentError refuses to encode an event with more absent fields than it has, or all of them.
func absentError(name string, absent, total int) error {
	return fmt.Errorf("drift: encode %s: %d of %d fields absent", name, absent, total)
}

// Name is a 32-byte name field (a User's, a market's) as text: UTF-8 padded with spaces, the
// program's convention, or NULs.
func Name(b [32]byte) string {
	return string(bytes.TrimRight(b[:], " \x00"))
}
