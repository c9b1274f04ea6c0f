package solana

import (
	"errors"
	"fmt"
)

// MaxAccountKeys is how many accounts a message can name in all, static and looked up: an
// instruction refers to them by a one-byte index.
const MaxAccountKeys = 256

// MessageVersion tells a legacy message from a versioned one.
type MessageVersion uint8

const (
	// VersionLegacy is the original message format, without lookup tables or version prefix.
	VersionLegacy MessageVersion = iota
	// Version0 is the v0 message, which may take accounts from address lookup tables.
	Version0
)

// String names the version as web3.js does ("legacy", "0").
func (v MessageVersion) String() string {
	switch v {
	case VersionLegacy:
		return "legacy"
	case Version0:
		return "0"
	}
	return fmt.Sprintf("MessageVersion(%d)", uint8(v))
}

// MessageHeader says which of a message's static keys sign and which are read-only: the keys are
// ordered writable signers, read-only signers, writable non-signers, read-only non-signers.
type MessageHeader struct {
	NumRequiredSignatures       uint8
	NumReadonlySignedAccounts   uint8
	NumReadonlyUnsignedAccounts uint8
}

// CompiledInstruction is an instruction with its program and accounts given as indexes into the
// message's account keys (the static keys, then the writable, then the read-only looked-up ones).
type CompiledInstruction struct {
	ProgramIDIndex uint8
	Accounts       []uint8
	Data           []byte
}

// AddressTableLookup names the accounts a v0 message takes from one lookup table, by their
// indexes in the table.
type AddressTableLookup struct {
	AccountKey      PublicKey
	WritableIndexes []uint8
	ReadonlyIndexes []uint8
}

// Message is what a transaction's signers sign: its accounts, a recent blockhash and its
// instructions. AddressTableLookups is empty in a legacy message.
type Message struct {
	Version             MessageVersion
	Header              MessageHeader
	AccountKeys         []PublicKey // the static keys, in the header's order
	RecentBlockhash     [32]byte
	Instructions        []CompiledInstruction
	AddressTableLookups []AddressTableLookup
}

// Errors of message compilation, the limits web3.js enforces when it compiles a message.
var (
	ErrTooManyStaticKeys  = errors.New("solana: more than 256 static account keys")
	ErrTooManyAccountKeys = errors.New("solana: more than 256 account keys, static and looked up")
	ErrLookupIndex        = errors.New("solana: lookup table index past 255")
	ErrTooManySigners     = errors.New("solana: more than 255 signers")
)

// CompileV0 compiles instructions into a v0 message paid by payer, exactly as web3.js 1.98's
// TransactionMessage.compileToV0Message(tables) does, so that the bytes, and so the signatures,
// are the same as the TypeScript service's. Keys that neither sign nor are invoked as programs are
// taken from the tables, in the tables' order, when a table holds them.
func CompileV0(payer PublicKey, recentBlockhash [32]byte, ixs []Instruction, tables []LookupTable) (*Message, error) {
	ks := collectKeys(payer, ixs)
	var lookups []AddressTableLookup
	var fromWritable, fromReadonly []PublicKey
	for _, t := range tables {
		l, w, r, err := ks.extract(t)
		if err != nil {
			return nil, fmt.Errorf("solana: compile v0 message: %w", err)
		}
		if len(l.WritableIndexes) == 0 && len(l.ReadonlyIndexes) == 0 {
			continue
		}
		lookups = append(lookups, l)
		fromWritable = append(fromWritable, w...)
		fromReadonly = append(fromReadonly, r...)
	}
	m, err := ks.message(recentBlockhash, ixs, fromWritable, fromReadonly)
	if err != nil {
		return nil, fmt.Errorf("solana: compile v0 message: %w", err)
	}
	m.Version = Version0
	m.AddressTableLookups = lookups
	return m, nil
}

// CompileLegacy compiles instructions into a legacy message paid by payer, as web3.js 1.98's
// TransactionMessage.compileToLegacyMessage() does (not as the older Transaction.compileMessage,
// which orders keys otherwise).
func CompileLegacy(payer PublicKey, recentBlockhash [32]byte, ixs []Instruction) (*Message, error) {
	m, err := collectKeys(payer, ixs).message(recentBlockhash, ixs, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("solana: compile legacy message: %w", err)
	}
	return m, nil
}

// keyFlags is what the instructions ask of one key, merged over all its uses.
type keyFlags struct {
	signer, writable, invoked bool
}

// compiledKeys is every key of a message with its merged flags, in first-use order (the payer
// first): the order decides the key order within each class of the header, and the order of
// the indexes taken from a table.
type compiledKeys struct {
	order []PublicKey
	flags map[PublicKey]*keyFlags // a key drained into a lookup is deleted here and skipped in order
}

func collectKeys(payer PublicKey, ixs []Instruction) *compiledKeys {
	ks := &compiledKeys{flags: map[PublicKey]*keyFlags{}}
	get := func(k PublicKey) *keyFlags {
		f, ok := ks.flags[k]
		if !ok {
			f = &keyFlags{}
			ks.flags[k] = f
			ks.order = append(ks.order, k)
		}
		return f
	}
	p := get(payer)
	p.signer, p.writable = true, true
	for _, ix := range ixs {
		get(ix.ProgramID).invoked = true
		for _, a := range ix.Accounts {
			f := get(a.PublicKey)
			f.signer = f.signer || a.IsSigner
			f.writable = f.writable || a.IsWritable
		}
	}
	return ks
}

// extract takes from the keys those table t can stand for: the writable ones, then the
// read-only ones, each in key order, leaving signers and invoked programs static. A key the table
// holds twice is referred to by its first index.
func (ks *compiledKeys) extract(t LookupTable) (AddressTableLookup, []PublicKey, []PublicKey, error) {
	at := make(map[PublicKey]int, len(t.Addresses))
	for i := len(t.Addresses) - 1; i >= 0; i-- {
		at[t.Addresses[i]] = i
	}
	drain := func(writable bool) ([]uint8, []PublicKey, error) {
		var idx []uint8
		var keys []PublicKey
		for _, k := range ks.order {
			f, ok := ks.flags[k]
			if !ok || f.signer || f.invoked || f.writable != writable {
				continue
			}
			i, ok := at[k]
			if !ok {
				continue
			}
			if i >= MaxAccountKeys {
				return nil, nil, fmt.Errorf("%w: table %s holds %s at %d", ErrLookupIndex, t.Key, k, i)
			}
			idx = append(idx, uint8(i))
			keys = append(keys, k)
			delete(ks.flags, k)
		}
		return idx, keys, nil
	}
	l := AddressTableLookup{AccountKey: t.Key}
	w, wk, err := drain(true)
	if err != nil {
		return l, nil, nil, err
	}
	r, rk, err := drain(false)
	if err != nil {
		return l, nil, nil, err
	}
	l.WritableIndexes, l.ReadonlyIndexes = w, r
	return l, wk, rk, nil
}

// message orders the keys left static into the header's four classes and compiles the
// instructions against static ++ fromWritable ++ fromReadonly.
func (ks *compiledKeys) message(recentBlockhash [32]byte, ixs []Instruction, fromWritable, fromReadonly []PublicKey) (*Message, error) {
	if len(ks.flags) > MaxAccountKeys {
		return nil, fmt.Errorf("%w: %d", ErrTooManyStaticKeys, len(ks.flags))
	}
	static := make([]PublicKey, 0, len(ks.flags))
	class := func(signer, writable bool) int {
		n := 0
		for _, k := range ks.order {
			if f, ok := ks.flags[k]; ok && f.signer == signer && f.writable == writable {
				static = append(static, k)
				n++
			}
		}
		return n
	}
	writableSigners := class(true, true)
	readonlySigners := class(true, false)
	class(false, true)
	readonlyNonSigners := class(false, false)
	if writableSigners+readonlySigners > 255 {
		return nil, fmt.Errorf("%w: %d", ErrTooManySigners, writableSigners+readonlySigners)
	}
	if n := len(static) + len(fromWritable) + len(fromReadonly); n > MaxAccountKeys {
		return nil, fmt.Errorf("%w: %d", ErrTooManyAccountKeys, n)
	}

	index := make(map[PublicKey]uint8, len(static)+len(fromWritable)+len(fromReadonly))
	n := 0
	for _, seg := range [][]PublicKey{static, fromWritable, fromReadonly} {
		for _, k := range seg {
			index[k] = uint8(n)
			n++
		}
	}
	compiled := make([]CompiledInstruction, len(ixs))
	for i, ix := range ixs {
		c := CompiledInstruction{
			ProgramIDIndex: index[ix.ProgramID],
			Accounts:       make([]uint8, len(ix.Accounts)),
			Data:           ix.Data,
		}
		for j, a := range ix.Accounts {
			c.Accounts[j] = index[a.PublicKey]
		}
		compiled[i] = c
	}
	return &Message{
		Version: VersionLegacy,
		Header: MessageHeader{
			NumRequiredSignatures:       uint8(writableSigners + readonlySigners),
			NumReadonlySignedAccounts:   uint8(readonlySigners),
			NumReadonlyUnsignedAccounts: uint8(readonlyNonSigners),
		},
		AccountKeys:     static,
		RecentBlockhash: recentBlockhash,
		Instructions:    compiled,
	}, nil
}

// versionPrefix marks a versioned message: the top bit of the first byte, which in a legacy
// message is the signer count and never that large; the low bits are the version.
const versionPrefix = 0x80

// MarshalBinary serializes the message as it is signed and sent: for v0 the version byte 0x80,
// then the header, the static keys, the blockhash, the instructions and (v0) the lookups, each
// list led by its shortvec length.
func (m *Message) MarshalBinary() ([]byte, error) {
	return m.appendBinary(nil)
}

func (m *Message) appendBinary(b []byte) ([]byte, error) {
	switch m.Version {
	case Version0:
		b = append(b, versionPrefix)
	case VersionLegacy:
		if len(m.AddressTableLookups) > 0 {
			return nil, errors.New("solana: marshal message: a legacy message has no lookup tables")
		}
	default:
		return nil, fmt.Errorf("solana: marshal message: unknown version %d", m.Version)
	}
	b = append(b, m.Header.NumRequiredSignatures, m.Header.NumReadonlySignedAccounts, m.Header.NumReadonlyUnsignedAccounts)
	b = appendShortVec(b, len(m.AccountKeys))
	for _, k := range m.AccountKeys {
		b = append(b, k[:]...)
	}
	b = append(b, m.RecentBlockhash[:]...)
	b = appendShortVec(b, len(m.Instructions))
	for _, ix := range m.Instructions {
		b = append(b, ix.ProgramIDIndex)
		b = appendShortVec(b, len(ix.Accounts))
		b = append(b, ix.Accounts...)
		b = appendShortVec(b, len(ix.Data))
		b = append(b, ix.Data...)
	}
	if m.Version == Version0 {
		b = appendShortVec(b, len(m.AddressTableLookups))
		for _, l := range m.AddressTableLookups {
			b = append(b, l.AccountKey[:]...)
			b = appendShortVec(b, len(l.WritableIndexes))
			b = append(b, l.WritableIndexes...)
			b = appendShortVec(b, len(l.ReadonlyIndexes))
			b = append(b, l.ReadonlyIndexes...)
		}
	}
	return b, nil
}

// Signers are the keys whose signatures the message requires, the fee payer first.
func (m *Message) Signers() []PublicKey {
	n := min(int(m.Header.NumRequiredSignatures), len(m.AccountKeys))
	return m.AccountKeys[:n]
}

// FeePayer is the first signer, who pays the fees; the zero key when the message has no signer.
func (m *Message) FeePayer() PublicKey {
	if m.Header.NumRequiredSignatures == 0 || len(m.AccountKeys) == 0 {
		return PublicKey{}
	}
	return m.AccountKeys[0]
}

// NumLookedUp is how many accounts the message takes from lookup tables.
func (m *Message) NumLookedUp() int {
	n := 0
	for _, l := range m.AddressTableLookups {
		n += len(l.WritableIndexes) + len(l.ReadonlyIndexes)
	}
	return n
}

// IsSigner reports whether account index i of the message signs.
func (m *Message) IsSigner(i int) bool { return i < int(m.Header.NumRequiredSignatures) }

// IsWritable reports whether account index i (static keys, then writable looked-up, then
// read-only looked-up) is writable, as the header and the lookups say.
func (m *Message) IsWritable(i int) bool {
	static := len(m.AccountKeys)
	signers := int(m.Header.NumRequiredSignatures)
	switch {
	case i >= static:
		w := 0
		for _, l := range m.AddressTableLookups {
			w += len(l.WritableIndexes)
		}
		return i-static < w
	case i >= signers:
		return i-signers < static-signers-int(m.Header.NumReadonlyUnsignedAccounts)
	default:
		return i < signers-int(m.Header.NumReadonlySignedAccounts)
	}
}

// appendShortVec appends n in the compact-u16 encoding that leads every list of a message: seven
// bits a byte, low bits first, the top bit set on all bytes but the last.
func appendShortVec(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}
