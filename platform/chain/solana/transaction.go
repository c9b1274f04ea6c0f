package solana

import (
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/tidemark/tidemark/platform/chain/base58"
)

// PacketDataSize is the largest serialized transaction the network accepts: an IPv6 packet's
// minimum MTU less its IP and UDP headers.
const PacketDataSize = 1280 - 40 - 8

// SignatureSize is the size of an ed25519 signature.
const SignatureSize = ed25519.SignatureSize

// ErrTooLarge is returned when a transaction serializes to more than PacketDataSize bytes.
var ErrTooLarge = errors.New("solana: transaction larger than a packet")

// Transaction is a message and the signatures of its signers, in the order of the message's
// signer keys. An unsigned slot holds 64 zero bytes, as web3.js leaves it.
type Transaction struct {
	Signatures [][SignatureSize]byte
	Message    Message
}

// NewTransaction is m with an empty signature slot for each signer it requires, as web3.js's
// new VersionedTransaction(message) makes it.
func NewTransaction(m Message) *Transaction {
	return &Transaction{Signatures: make([][SignatureSize]byte, m.Header.NumRequiredSignatures), Message: m}
}

// MarshalBinary serializes the transaction as web3.js's VersionedTransaction.serialize() does:
// the shortvec signature count, the signatures, the message. It refuses a transaction that no
// validator would take, larger than PacketDataSize; web3.js serializes a transaction up to a
// little larger (its message alone is bounded by PacketDataSize) which the RPC then refuses.
func (t *Transaction) MarshalBinary() ([]byte, error) {
	if len(t.Signatures) != int(t.Message.Header.NumRequiredSignatures) {
		return nil, fmt.Errorf("solana: marshal transaction: %d signatures for %d signers", len(t.Signatures), t.Message.Header.NumRequiredSignatures)
	}
	b := appendShortVec(nil, len(t.Signatures))
	for _, s := range t.Signatures {
		b = append(b, s[:]...)
	}
	b, err := t.Message.appendBinary(b)
	if err != nil {
		return nil, err
	}
	if len(b) > PacketDataSize {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(b), PacketDataSize)
	}
	return b, nil
}

// Signature is the transaction's id: the base58 text of its first signature, the fee payer's.
// It is empty when the transaction has no signature.
func (t *Transaction) Signature() string {
	if len(t.Signatures) == 0 {
		return ""
	}
	return base58.Encode(t.Signatures[0][:])
}

// Sign signs the message with each key and puts the signature in its signer's slot. A key that is
// not a signer of the message is an error.
func (t *Transaction) Sign(keys ...ed25519.PrivateKey) error {
	msg, err := t.Message.MarshalBinary()
	if err != nil {
		return fmt.Errorf("solana: sign: %w", err)
	}
	if len(t.Signatures) != int(t.Message.Header.NumRequiredSignatures) {
		return fmt.Errorf("solana: sign: %d signature slots for %d signers", len(t.Signatures), t.Message.Header.NumRequiredSignatures)
	}
	signers := t.Message.Signers()
	for _, k := range keys {
		pub := PublicKey(k.Public().(ed25519.PublicKey))
		i := indexOf(signers, pub)
		if i < 0 {
			return fmt.Errorf("solana: sign: %s is not a signer of the message", pub)
		}
		copy(t.Signatures[i][:], ed25519.Sign(k, msg))
	}
	return nil
}

// Verify checks every required signature over the message bytes, naming the first signer whose
// signature is missing or wrong.
func (t *Transaction) Verify() error {
	msg, err := t.Message.MarshalBinary()
	if err != nil {
		return fmt.Errorf("solana: verify: %w", err)
	}
	signers := t.Message.Signers()
	if len(t.Signatures) != len(signers) || len(signers) != int(t.Message.Header.NumRequiredSignatures) {
		return fmt.Errorf("solana: verify: %d signatures for %d signers", len(t.Signatures), t.Message.Header.NumRequiredSignatures)
	}
	for i, k := range signers {
		if t.Signatures[i] == ([SignatureSize]byte{}) {
			return fmt.Errorf("solana: verify: signer %d (%s) has not signed", i, k)
		}
		if !ed25519.Verify(k[:], msg, t.Signatures[i][:]) {
			return fmt.Errorf("solana: verify: signature %d does not verify for %s", i, k)
		}
	}
	return nil
}

func indexOf(keys []PublicKey, k PublicKey) int {
	for i, x := range keys {
		if x == k {
			return i
		}
	}
	return -1
}

// ParseTransaction reads a serialized transaction, legacy or v0, as web3.js's
// VersionedTransaction.deserialize (and its Transaction.from fallback for legacy) reads one, but
// as strictly as the runtime: lengths in canonical compact-u16, no bytes left over, one signature
// per required signer, and a message that passes the runtime's sanity checks (indexes in range,
// the fee payer a writable signer, programs not the payer nor looked up).
func ParseTransaction(b []byte) (*Transaction, error) {
	r := reader{b: b}
	n, err := r.shortVec("signature count")
	if err != nil {
		return nil, fmt.Errorf("solana: parse transaction: %w", err)
	}
	t := &Transaction{Signatures: make([][SignatureSize]byte, 0, min(n, len(b)/SignatureSize))}
	for i := range n {
		s, err := r.bytes(SignatureSize, fmt.Sprintf("signature %d", i))
		if err != nil {
			return nil, fmt.Errorf("solana: parse transaction: %w", err)
		}
		t.Signatures = append(t.Signatures, [SignatureSize]byte(s))
	}
	if err := t.Message.read(&r); err != nil {
		return nil, fmt.Errorf("solana: parse transaction: %w", err)
	}
	if len(r.b) > 0 {
		return nil, fmt.Errorf("solana: parse transaction: %d bytes after the message", len(r.b))
	}
	if len(t.Signatures) != int(t.Message.Header.NumRequiredSignatures) {
		return nil, fmt.Errorf("solana: parse transaction: %d signatures, the message requires %d", len(t.Signatures), t.Message.Header.NumRequiredSignatures)
	}
	return t, nil
}

// ParseMessage reads a serialized message, legacy or v0, with the checks of ParseTransaction.
func ParseMessage(b []byte) (*Message, error) {
	r := reader{b: b}
	var m Message
	if err := m.read(&r); err != nil {
		return nil, fmt.Errorf("solana: parse message: %w", err)
	}
	if len(r.b) > 0 {
		return nil, fmt.Errorf("solana: parse message: %d bytes after the message", len(r.b))
	}
	return &m, nil
}

func (m *Message) read(r *reader) error {
	first, err := r.byte("message header")
	if err != nil {
		return err
	}
	m.Version = VersionLegacy
	if first&versionPrefix != 0 {
		if v := first &^ versionPrefix; v != 0 {
			return fmt.Errorf("message version %d is not supported", v)
		}
		m.Version = Version0
		if first, err = r.byte("message header"); err != nil {
			return err
		}
	}
	h, err := r.bytes(2, "message header")
	if err != nil {
		return err
	}
	m.Header = MessageHeader{NumRequiredSignatures: first, NumReadonlySignedAccounts: h[0], NumReadonlyUnsignedAccounts: h[1]}

	n, err := r.shortVec("account key count")
	if err != nil {
		return err
	}
	m.AccountKeys = make([]PublicKey, 0, min(n, len(r.b)/PublicKeySize))
	for i := range n {
		k, err := r.bytes(PublicKeySize, fmt.Sprintf("account key %d", i))
		if err != nil {
			return err
		}
		m.AccountKeys = append(m.AccountKeys, PublicKey(k))
	}
	bh, err := r.bytes(32, "recent blockhash")
	if err != nil {
		return err
	}
	m.RecentBlockhash = [32]byte(bh)

	if n, err = r.shortVec("instruction count"); err != nil {
		return err
	}
	m.Instructions = make([]CompiledInstruction, 0, min(n, len(r.b)))
	for i := range n {
		var ix CompiledInstruction
		if ix.ProgramIDIndex, err = r.byte(fmt.Sprintf("instruction %d program index", i)); err != nil {
			return err
		}
		if ix.Accounts, err = r.list(fmt.Sprintf("instruction %d accounts", i)); err != nil {
			return err
		}
		if ix.Data, err = r.list(fmt.Sprintf("instruction %d data", i)); err != nil {
			return err
		}
		m.Instructions = append(m.Instructions, ix)
	}

	if m.Version == Version0 {
		if n, err = r.shortVec("lookup count"); err != nil {
			return err
		}
		m.AddressTableLookups = make([]AddressTableLookup, 0, min(n, len(r.b)/PublicKeySize))
		for i := range n {
			var l AddressTableLookup
			k, err := r.bytes(PublicKeySize, fmt.Sprintf("lookup %d table", i))
			if err != nil {
				return err
			}
			l.AccountKey = PublicKey(k)
			if l.WritableIndexes, err = r.list(fmt.Sprintf("lookup %d writable indexes", i)); err != nil {
				return err
			}
			if l.ReadonlyIndexes, err = r.list(fmt.Sprintf("lookup %d read-only indexes", i)); err != nil {
				return err
			}
			m.AddressTableLookups = append(m.AddressTableLookups, l)
		}
	}
	return m.sanitize()
}

// sanitize applies the runtime's sanity checks of a message, so that a parsed message can be
// indexed without further checks.
func (m *Message) sanitize() error {
	h := m.Header
	static := len(m.AccountKeys)
	if int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > static {
		return fmt.Errorf("header counts %d signers and %d read-only non-signers among %d keys", h.NumRequiredSignatures, h.NumReadonlyUnsignedAccounts, static)
	}
	if h.NumReadonlySignedAccounts >= h.NumRequiredSignatures {
		return fmt.Errorf("header counts %d read-only signers among %d signers: the fee payer must be a writable signer", h.NumReadonlySignedAccounts, h.NumRequiredSignatures)
	}
	for i, l := range m.AddressTableLookups {
		if len(l.WritableIndexes)+len(l.ReadonlyIndexes) == 0 {
			return fmt.Errorf("lookup %d (%s) takes no account", i, l.AccountKey)
		}
	}
	total := static + m.NumLookedUp()
	if total > MaxAccountKeys {
		return fmt.Errorf("%d account keys, at most %d", total, MaxAccountKeys)
	}
	seen := make(map[PublicKey]bool, static)
	for _, k := range m.AccountKeys {
		if seen[k] {
			return fmt.Errorf("account key %s appears twice", k)
		}
		seen[k] = true
	}
	for i, ix := range m.Instructions {
		// The payer pays and cannot be the program; a program cannot come from a table, as it
		// must be loaded before the tables are.
		if ix.ProgramIDIndex == 0 || int(ix.ProgramIDIndex) >= static {
			return fmt.Errorf("instruction %d: program index %d, want 1 to %d", i, ix.ProgramIDIndex, static-1)
		}
		for _, a := range ix.Accounts {
			if int(a) >= total {
				return fmt.Errorf("instruction %d: account index %d of %d keys", i, a, total)
			}
		}
	}
	return nil
}

// reader consumes a serialized transaction from the front, naming what it was reading when the
// bytes run out.
type reader struct{ b []byte }

var errTruncated = errors.New("truncated")

func (r *reader) bytes(n int, what string) ([]byte, error) {
	if n > len(r.b) {
		return nil, fmt.Errorf("%s: %w: want %d bytes, %d left", what, errTruncated, n, len(r.b))
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v, nil
}

func (r *reader) byte(what string) (byte, error) {
	v, err := r.bytes(1, what)
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// list reads a shortvec length and as many bytes.
func (r *reader) list(what string) ([]byte, error) {
	n, err := r.shortVec(what)
	if err != nil {
		return nil, err
	}
	v, err := r.bytes(n, what)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), v...), nil
}

// shortVec reads a compact-u16 as the runtime does: at most three bytes, a value that fits 16
// bits, and no longer encoding than needed.
func (r *reader) shortVec(what string) (int, error) {
	v := 0
	for i := 0; ; i++ {
		if i == 3 {
			return 0, fmt.Errorf("%s: length longer than three bytes", what)
		}
		c, err := r.byte(what)
		if err != nil {
			return 0, err
		}
		v |= int(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, fmt.Errorf("%s: length not in its shortest encoding", what)
			}
			if v > 0xffff {
				return 0, fmt.Errorf("%s: length %d past 65535", what, v)
			}
			return v, nil
		}
	}
}
