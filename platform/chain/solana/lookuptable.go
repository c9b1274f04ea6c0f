package solana

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The account layout of the Address Lookup Table program: a bincode ProgramState, padded to a
// fixed-size header, then the addresses back to back.
const (
	// LookupTableMetaSize is the size of the header before the addresses.
	LookupTableMetaSize = 56
	// LookupTableMaxAddresses is how many addresses a table can hold: a message indexes them
	// with one byte.
	LookupTableMaxAddresses = 256

	lookupTableStateUninitialized = 0
	lookupTableStateLookupTable   = 1
)

// LookupTableActive is the deactivation slot of a table that has not been deactivated.
const LookupTableActive = math.MaxUint64

// LookupTable is an address lookup table as a v0 message uses it: its address and the addresses
// it holds, in their order (a message refers to them by index).
type LookupTable struct {
	Key       PublicKey
	Addresses []PublicKey
}

// LookupTableMeta is the header of a lookup table account, the program's own bookkeeping.
type LookupTableMeta struct {
	// DeactivationSlot is LookupTableActive until the authority deactivates the table.
	DeactivationSlot uint64
	// LastExtendedSlot is the slot of the last extension; addresses from
	// LastExtendedSlotStartIndex on are not usable in that same slot.
	LastExtendedSlot           uint64
	LastExtendedSlotStartIndex uint8
	// Authority may extend, deactivate and close the table; nil once the table is frozen.
	Authority *PublicKey
}

// DecodeLookupTable reads the account data of the lookup table at key.
func DecodeLookupTable(key PublicKey, data []byte) (LookupTable, error) {
	if _, err := DecodeLookupTableMeta(data); err != nil {
		return LookupTable{}, fmt.Errorf("solana: lookup table %s: %w", key, err)
	}
	raw := data[LookupTableMetaSize:]
	if len(raw)%PublicKeySize != 0 {
		return LookupTable{}, fmt.Errorf("solana: lookup table %s: %d address bytes are not a whole number of keys", key, len(raw))
	}
	t := LookupTable{Key: key, Addresses: make([]PublicKey, len(raw)/PublicKeySize)}
	for i := range t.Addresses {
		t.Addresses[i] = PublicKey(raw[i*PublicKeySize:])
	}
	return t, nil
}

// DecodeLookupTableMeta reads the header of a lookup table account. The bytes of the authority
// field are read only when the option says it is present: the program leaves the old key's
// bytes in place when it freezes a table.
func DecodeLookupTableMeta(data []byte) (LookupTableMeta, error) {
	if len(data) < LookupTableMetaSize {
		return LookupTableMeta{}, fmt.Errorf("lookup table account has %d bytes, shorter than its %d-byte header", len(data), LookupTableMetaSize)
	}
	switch state := binary.LittleEndian.Uint32(data); state {
	case lookupTableStateLookupTable:
	case lookupTableStateUninitialized:
		return LookupTableMeta{}, fmt.Errorf("lookup table account is uninitialized")
	default:
		return LookupTableMeta{}, fmt.Errorf("lookup table account has state %d, not a lookup table", state)
	}
	m := LookupTableMeta{
		DeactivationSlot:           binary.LittleEndian.Uint64(data[4:]),
		LastExtendedSlot:           binary.LittleEndian.Uint64(data[12:]),
		LastExtendedSlotStartIndex: data[20],
	}
	switch data[21] {
	case 0:
	case 1:
		a := PublicKey(data[22:])
		m.Authority = &a
	default:
		return LookupTableMeta{}, fmt.Errorf("lookup table authority has option tag %d", data[21])
	}
	return m, nil
}

// EncodeLookupTable is the account data of a lookup table holding addresses, as the program
// writes it, for a simulated chain to serve.
func EncodeLookupTable(meta LookupTableMeta, addresses []PublicKey) ([]byte, error) {
	if len(addresses) > LookupTableMaxAddresses {
		return nil, fmt.Errorf("solana: lookup table of %d addresses, at most %d", len(addresses), LookupTableMaxAddresses)
	}
	b := make([]byte, LookupTableMetaSize, LookupTableMetaSize+len(addresses)*PublicKeySize)
	binary.LittleEndian.PutUint32(b, lookupTableStateLookupTable)
	binary.LittleEndian.PutUint64(b[4:], meta.DeactivationSlot)
	binary.LittleEndian.PutUint64(b[12:], meta.LastExtendedSlot)
	b[20] = meta.LastExtendedSlotStartIndex
	if meta.Authority != nil {
		b[21] = 1
		copy(b[22:], meta.Authority[:])
	}
	for _, a := range addresses {
		b = append(b, a[:]...)
	}
	return b, nil
}
