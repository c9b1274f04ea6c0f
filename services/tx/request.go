package tx

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/fault"
)

// MaxBody is the largest request body read: the largest legitimate one, a signed transaction of a
// packet's size in base64, is about 1.7 KB.
const MaxBody = 16 << 10

// MaxOrderIDs bounds a cancel's orderIds: a subaccount holds at most 32 open orders.
const MaxOrderIDs = 32

// Decimal is an amount or a price as the client wrote it, a JSON string or number: its text is
// kept so that it converts to program units exactly, never through a float.
type Decimal string

// UnmarshalJSON takes a string or a number.
func (d *Decimal) UnmarshalJSON(b []byte) error {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("must be a decimal string or number")
		}
		s = n.String()
	}
	*d = Decimal(s)
	return nil
}

// units converts d to an integer number of 10^-decimals units: a plain decimal (digits, at most one
// point, no sign or exponent) with at most decimals digits after the point, above zero and within
// a u64. ok is false otherwise.
func (d Decimal) units(decimals int) (v uint64, ok bool) {
	s := strings.TrimSpace(string(d))
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > decimals || !digits(whole) || !digits(frac) {
		return 0, false
	}
	n, ok := new(big.Int).SetString(cmpOr(whole, "0")+frac+strings.Repeat("0", decimals-len(frac)), 10)
	if !ok || n.Sign() <= 0 || !n.IsUint64() {
		return 0, false
	}
	return n.Uint64(), true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// simulateOr is a request's simulate flag, true when left out (the reference's default for the
// builders).
func simulateOr(p *bool, d bool) bool {
	if p == nil {
		return d
	}
	return *p
}

func invalid(format string, args ...any) error { return fault.Errorf(fault.Invalid, format, args...) }

// property is a required property of a body and whether the request set it.
type property struct {
	name string
	set  bool
}

// required names the first of the properties that is missing, as the reference's schema check does.
func required(props ...property) error {
	for _, p := range props {
		if !p.set {
			return invalid("body must have required property '%s'", p.name)
		}
	}
	return nil
}

// key parses a public key property; the message is the reference's.
func key(name, v string) (solana.PublicKey, error) {
	k, err := solana.ParsePublicKey(v)
	if err != nil {
		return k, invalid("Invalid public key format for %s", name)
	}
	return k, nil
}

// DepositRequest is the body of POST /tx/deposit and /tx/withdraw.
type DepositRequest struct {
	AccountID *string  `json:"accountId"`
	Amount    *Decimal `json:"amount"`
	Symbol    *string  `json:"symbol"`
	Simulate  *bool    `json:"simulate"`
}

// check validates what needs no chain state.
func (r DepositRequest) check() (solana.PublicKey, error) {
	if r.AccountID == nil || r.Amount == nil || r.Symbol == nil || *r.AccountID == "" || *r.Amount == "" || *r.Symbol == "" {
		return solana.PublicKey{}, invalid("Missing required fields: accountId and amount")
	}
	return key("accountId", *r.AccountID)
}

// OrderRequest is the body of POST /tx/order/place.
type OrderRequest struct {
	AccountID           *string        `json:"accountId"`
	Symbol              *string        `json:"symbol"`
	Direction           *string        `json:"direction"`
	Amount              *Decimal       `json:"amount"`
	OrderType           *string        `json:"orderType"`
	MarginMode          *string        `json:"marginMode"`
	PositionMaxLeverage *float64       `json:"positionMaxLeverage"`
	Price               *Decimal       `json:"price"`
	ReduceOnly          *bool          `json:"reduceOnly"`
	PostOnly            *bool          `json:"postOnly"`
	UseSwift            *bool          `json:"useSwift"`
	BuilderParams       *BuilderParams `json:"builderParams"`
	Simulate            *bool          `json:"simulate"`
}

// BuilderParams names the builder of an order and its fee.
type BuilderParams struct {
	BuilderIdx         *int64 `json:"builderIdx"`
	BuilderFeeTenthBps *int64 `json:"builderFeeTenthBps"`
}

func (r OrderRequest) check() (solana.PublicKey, error) {
	if err := required(property{"accountId", r.AccountID != nil}, property{"symbol", r.Symbol != nil}, property{"direction", r.Direction != nil},
		property{"amount", r.Amount != nil}, property{"orderType", r.OrderType != nil}); err != nil {
		return solana.PublicKey{}, err
	}
	if err := oneOf("direction", *r.Direction, "long", "short"); err != nil {
		return solana.PublicKey{}, err
	}
	if err := oneOf("orderType", *r.OrderType, "market", "limit"); err != nil {
		return solana.PublicKey{}, err
	}
	if r.MarginMode != nil {
		if err := oneOf("marginMode", *r.MarginMode, "cross", "isolated"); err != nil {
			return solana.PublicKey{}, err
		}
	}
	if l := r.PositionMaxLeverage; l != nil && (*l < 1 || *l > 1e4) {
		return solana.PublicKey{}, invalid("positionMaxLeverage must be between 1 and 10000, got %v", *l)
	}
	if *r.OrderType == "limit" && (r.Price == nil || *r.Price == "") {
		return solana.PublicKey{}, invalid("price is required for limit orders")
	}
	if r.UseSwift != nil && *r.UseSwift {
		return solana.PublicKey{}, invalid("useSwift is not supported: this API builds on-chain orders only; send useSwift false or leave it out")
	}
	if b := r.BuilderParams; b != nil {
		if b.BuilderIdx == nil || *b.BuilderIdx < 0 || *b.BuilderIdx > 0xff {
			return solana.PublicKey{}, invalid("builderParams.builderIdx must be an integer from 0 to 255")
		}
		if b.BuilderFeeTenthBps == nil || *b.BuilderFeeTenthBps < 1 || *b.BuilderFeeTenthBps > 0xffff {
			return solana.PublicKey{}, invalid("builderParams.builderFeeTenthBps must be an integer from 1 to 65535")
		}
	}
	return key("accountId", *r.AccountID)
}

func oneOf(name, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return invalid("body/%s must be equal to one of the allowed values: %s", name, strings.Join(allowed, ", "))
}

// CancelRequest is the body of POST /tx/order/cancel.
type CancelRequest struct {
	AccountID *string  `json:"accountId"`
	OrderIDs  []uint32 `json:"orderIds"`
	Simulate  *bool    `json:"simulate"`
}

func (r CancelRequest) check() (solana.PublicKey, error) {
	if err := required(property{"accountId", r.AccountID != nil}); err != nil {
		return solana.PublicKey{}, err
	}
	if len(r.OrderIDs) > MaxOrderIDs {
		return solana.PublicKey{}, invalid("orderIds may list at most %d orders, got %d", MaxOrderIDs, len(r.OrderIDs))
	}
	return key("accountId", *r.AccountID)
}

// SettleRequest is the body of POST /tx/settlePnl.
type SettleRequest struct {
	AccountID *string  `json:"accountId"`
	Symbols   []string `json:"symbols"`
	Simulate  *bool    `json:"simulate"`
}

func (r SettleRequest) check() (solana.PublicKey, error) {
	if err := required(property{"accountId", r.AccountID != nil}); err != nil {
		return solana.PublicKey{}, err
	}
	if r.Symbols != nil && len(r.Symbols) == 0 {
		return solana.PublicKey{}, invalid("body/symbols must NOT have fewer than 1 items")
	}
	return key("accountId", *r.AccountID)
}

// BuilderInitRequest is the body of POST /tx/builder/init.
type BuilderInitRequest struct {
	BuilderID *string `json:"builderId"`
	Simulate  *bool   `json:"simulate"`
}

func (r BuilderInitRequest) check() (solana.PublicKey, error) {
	if err := required(property{"builderId", r.BuilderID != nil}); err != nil {
		return solana.PublicKey{}, err
	}
	return key("builderId", *r.BuilderID)
}

// BuilderApproveRequest is the body of POST /tx/builder/approve.
type BuilderApproveRequest struct {
	AuthorityID    *string  `json:"authorityId"`
	BuilderID      *string  `json:"builderId"`
	MaxFeeTenthBps *float64 `json:"maxFeeTenthBps"`
	NumOrders      *float64 `json:"numOrders"`
	Simulate       *bool    `json:"simulate"`
}

// DefaultNumOrders is the escrow's order slots when the request names none (the reference's).
const DefaultNumOrders = 16

func (r BuilderApproveRequest) check() (authority, builder solana.PublicKey, fee uint16, orders uint16, err error) {
	if err = required(property{"authorityId", r.AuthorityID != nil}, property{"builderId", r.BuilderID != nil},
		property{"maxFeeTenthBps", r.MaxFeeTenthBps != nil}); err != nil {
		return
	}
	if authority, err = key("authorityId", *r.AuthorityID); err != nil {
		return
	}
	if builder, err = key("builderId", *r.BuilderID); err != nil {
		return
	}
	if f := *r.MaxFeeTenthBps; f != float64(int64(f)) || f < 1 || f > 0xffff {
		err = invalid("maxFeeTenthBps must be a positive integer")
		return
	}
	fee, orders = uint16(*r.MaxFeeTenthBps), DefaultNumOrders
	if n := r.NumOrders; n != nil {
		if *n != float64(int64(*n)) || *n < 1 || *n > 128 {
			err = invalid("numOrders must be an integer between 1 and 128")
			return
		}
		orders = uint16(*n)
	}
	return
}

// ExecuteRequest is the body of POST /tx/execute.
type ExecuteRequest struct {
	SignedTx *string `json:"signedTx"`
	Simulate *bool   `json:"simulate"`
}

func (r ExecuteRequest) check() ([]byte, error) {
	if r.SignedTx == nil || *r.SignedTx == "" {
		return nil, invalid("Missing signedTransaction in request body")
	}
	b, err := base64.StdEncoding.DecodeString(*r.SignedTx)
	if err != nil {
		return nil, invalid("signedTx must be the base64 of a signed transaction: %v", err)
	}
	return b, nil
}
