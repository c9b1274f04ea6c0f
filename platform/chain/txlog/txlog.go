// Package txlog reads the Drift events of a transaction from its log messages (meta.logMessages),
// as the protocol's own parser does (protocol-v2 sdk/src/events/parse.ts) and numbered as its Data
// API numbers them.
//
// The runtime logs a program's events as lines of base64: anchor's emit! as "Program data: ", the
// program's emit_stack (OrderActionRecord, OrderRecord and a few others) as "Program log: ", so one
// event type can come under both prefixes, even in one transaction. Every program's lines share the
// one log, so the parser follows the program stack ("Program <id> invoke [n]" pushes, "... success"
// pops) and reads events only while Drift is the running program: its events inside another
// program's call count (a jit-proxy's CPI into Drift), another program's lines inside Drift's call
// do not (a swap route's "Program data: ").
//
// A line that is no Drift event is skipped, as the SDK skips it: text that is not base64 (msg!
// text), a payload shorter than a discriminator, a discriminator that is no event of the IDL. A line
// that is a known event but does not decode is an error, which the SDK would throw too: the log is
// not what the program writes.
package txlog

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/tidemark/tidemark/platform/chain/anchor"
	"github.com/tidemark/tidemark/platform/chain/drift"
)

// Prefix is the kind of log line an event came in.
type Prefix uint8

const (
	// PrefixData is "Program data: ", the line of sol_log_data, which anchor's emit! writes.
	PrefixData Prefix = iota + 1
	// PrefixLog is "Program log: ", the line of msg!, which the program's emit_stack writes.
	PrefixLog
)

// The lines' prefixes as the runtime writes them, the space included.
const (
	dataPrefix = "Program data: "
	logPrefix  = "Program log: "
	// truncatedPrefix starts the line the runtime writes in place of everything past its log limit.
	truncatedPrefix = "Log truncated"
)

// String is the prefix without its colon, "Program data" or "Program log", as the fixtures and the
// chain facts name it.
func (p Prefix) String() string {
	switch p {
	case PrefixData:
		return "Program data"
	case PrefixLog:
		return "Program log"
	}
	return fmt.Sprintf("Prefix(%d)", uint8(p))
}

// Event is one Drift event of a transaction and where it is in the transaction.
type Event struct {
	drift.Event
	// TxSigIndex is the event's index in the transaction as the Data API numbers it: after the vault
	// program's events, then in log order. (TxSig, TxSigIndex) is the identity of the record made
	// from the event.
	TxSigIndex int
	// LogIndex is the index of the event's line in the transaction's log messages.
	LogIndex int
	// Prefix is the kind of line the event came in.
	Prefix Prefix
}

// Result is what a transaction's log says of Drift.
type Result struct {
	// Events are the Drift events, in log order.
	Events []Event
	// Truncated is true when the log ends at "Log truncated": the runtime dropped every line past its
	// log limit, so events are missing after the last of Events and no RPC can give them back. Events
	// holds those before the cut, as the SDK and the Data API keep them; the caller decides whether to
	// index a partial transaction, and should at least count it (a fillRecordId gap follows).
	Truncated bool
	// VaultEvents is how many events the vault program (VaultProgramID) logged before the cut. The Data
	// API numbers a transaction's vault events before its Drift events, so the first of Events has
	// TxSigIndex VaultEvents.
	VaultEvents int
}

// Error is the kind of a refusal of a log.
type Error string

func (e Error) Error() string { return string(e) }

// ErrUnbalanced is the refusal of a "Program <id> success" or "failed" line while no program runs:
// the SDK throws there too, and a log the runtime wrote never has one.
const ErrUnbalanced Error = "a program returns while none is running"

// LineError is the refusal of a transaction's log at one of its lines.
type LineError struct {
	Line   int    // the index of the line in the log messages
	Prefix Prefix // the kind of event line, zero for a line of the program stack
	Err    error  // a *drift.DecodeError (the event, the field and the offset) or ErrUnbalanced
}

func (e *LineError) Error() string {
	if e.Prefix != 0 {
		return fmt.Sprintf("txlog: log line %d (%s): %v", e.Line, e.Prefix, e.Err)
	}
	return fmt.Sprintf("txlog: log line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Parse reads the Drift events of one transaction from its log messages. failed is whether the
// transaction failed (meta.err is not null): the runtime rolled back all its instructions did, so
// its events never happened and Parse returns none, as the SDK's subscribers and the Data API drop
// the transaction.
//
// Parsing stops at a "Log truncated" line (see Result.Truncated). The error is a *LineError.
//
// Unlike the SDK, a "Program <id> failed" line pops the stack as "success" does. Only a failed
// transaction has one, since a program's failure fails the whole transaction, so this changes
// nothing for the transactions parsed; it keeps a hand-made log from leaving a returned program
// running.
func Parse(logMessages []string, failed bool) (Result, error) {
	var r Result
	if failed {
		return r, nil
	}
	var (
		// frames holds the program stack, the running programs' ids with the innermost last, without
		// an allocation up to the runtime's CPI depth.
		frames [8]string
		stack  = frames[:0]
		b64    base64Buffer
	)
	for i, line := range logMessages {
		if strings.HasPrefix(line, truncatedPrefix) {
			r.Truncated = true
			break
		}
		running := ""
		if len(stack) > 0 {
			running = stack[len(stack)-1]
		}
		if running == drift.ProgramID || running == VaultProgramID {
			if payload, prefix, ok := eventLine(line); ok {
				data := b64.decode(payload)
				if running == VaultProgramID {
					if isVaultEvent(data) {
						r.VaultEvents++
					}
					continue
				}
				e, err := decodeEvent(data)
				if err != nil {
					return Result{}, &LineError{Line: i, Prefix: prefix, Err: err}
				}
				if e != nil {
					r.Events = append(r.Events, Event{Event: e, LogIndex: i, Prefix: prefix})
				}
				continue
			}
		}
		var err error
		if stack, err = follow(stack, line); err != nil {
			return Result{}, &LineError{Line: i, Err: err}
		}
	}
	for k := range r.Events {
		r.Events[k].TxSigIndex = r.VaultEvents + k
	}
	return r, nil
}

// eventLine returns the payload of a line that may be an event and the kind of its line.
func eventLine(line string) (string, Prefix, bool) {
	if p, ok := strings.CutPrefix(line, dataPrefix); ok {
		return p, PrefixData, true
	}
	if p, ok := strings.CutPrefix(line, logPrefix); ok {
		return p, PrefixLog, true
	}
	return "", 0, false
}

// base64Buffer decodes the lines' payloads into memory reused from line to line: the events copy
// what they keep.
type base64Buffer struct {
	src, dst []byte
}

// decode decodes payload, nil when it is not standard base64, which is how msg! text is told from
// events. The bytes are valid until the next decode.
func (b *base64Buffer) decode(payload string) []byte {
	if cap(b.src) < len(payload) {
		// Event lines are a few hundred bytes: a buffer or two serve a whole transaction.
		b.src = make([]byte, 0, max(len(payload), 2*cap(b.src), 256))
		b.dst = make([]byte, base64.StdEncoding.DecodedLen(cap(b.src)))
	}
	b.src = append(b.src[:0], payload...)
	n := base64.StdEncoding.DecodedLen(len(b.src))
	n, err := base64.StdEncoding.Decode(b.dst[:n], b.src)
	if err != nil {
		return nil
	}
	return b.dst[:n]
}

// decodeEvent decodes a Drift line's payload: nil and no error for what the SDK skips (no
// discriminator, an unknown one), the refusal of a known event that does not decode.
func decodeEvent(data []byte) (drift.Event, error) {
	if len(data) < anchor.DiscriminatorSize {
		return nil, nil
	}
	e, err := drift.DecodeEvent(data)
	if errors.Is(err, drift.ErrUnknownEvent) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

// follow moves the program stack by one line of the runtime's: "Program <id> invoke [n]" pushes id,
// "Program <id> success" and "Program <id> failed: <why>" pop; every other line leaves it. As the
// SDK does, only the line's text before its first colon is read, so that no "Program log: " text
// can look like an invoke. The SDK matches looser ("invoke" anywhere, " success" anywhere); both
// agree on every line the runtime writes, and the strict match keeps a crafted line such as
// "Program x invoked" from moving the stack.
func follow(stack []string, line string) ([]string, error) {
	head, _, _ := strings.Cut(line, ":")
	rest, ok := strings.CutPrefix(head, "Program ")
	if !ok {
		return stack, nil
	}
	id, verb, ok := strings.Cut(rest, " ")
	if !ok {
		return stack, nil
	}
	switch {
	case verb == "success" || verb == "failed":
		if len(stack) == 0 {
			return stack, ErrUnbalanced
		}
		return stack[:len(stack)-1], nil
	case strings.HasPrefix(verb, "invoke [") && strings.HasSuffix(verb, "]"):
		return append(stack, id), nil
	}
	return stack, nil
}

// littleEndian is the discriminator of data as the generated decoders compare it.
func littleEndian(data []byte) uint64 { return binary.LittleEndian.Uint64(data) }
