// Package ws is the WebSocket edge's protocol: the channels a client subscribes to, the requests it
// sends, the frames the server answers with and the sequence numbers that let a client find a gap by
// arithmetic and resume a channel on any replica. api/asyncapi.yaml documents it; hub/ serves it, edge/ feeds it from the edge
// topics, service/ runs it.
package ws

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/tidemark/tidemark/platform/events"
)

// ChannelType names a kind of channel, as clients write it in channelType.
type ChannelType string

// The channel types of the spec's Events part; orderbook and user are reserved.
const (
	Candle        ChannelType = "candle"
	Markets       ChannelType = "markets"
	Pricing       ChannelType = "pricing"
	Notifications ChannelType = "notifications"
	Orderbook     ChannelType = "orderbook"
	User          ChannelType = "user"
)

// ChannelTypes are the served types, in the order metrics and documents list them.
func ChannelTypes() []ChannelType { return []ChannelType{Candle, Markets, Pricing, Notifications} }

// Channel is one stream a client can subscribe to.
type Channel struct {
	Type       ChannelType
	Symbol     string // candle
	Resolution string // candle
	Authority  string // notifications
}

// Name is the channel as the protocol's existing API names it in the channel field:
// candle:<symbol>:<resolution>, markets:summary, pricing, notifications:<authority>. They are the
// channels the producers number their messages in (events.HeaderEdgeChannel).
func (c Channel) Name() string {
	switch c.Type {
	case Candle:
		return events.CandleChannel(c.Symbol, c.Resolution)
	case Markets:
		return events.MarketsChannel
	case Pricing:
		return events.PricingChannel
	case Notifications:
		return events.NotificationsChannel(c.Authority)
	}
	return string(c.Type)
}

// Describe is the channel in the acknowledgement's message.
func (c Channel) Describe() string {
	switch c.Type {
	case Candle:
		return c.Symbol + " " + c.Resolution
	case Markets:
		return "markets updates"
	case Pricing:
		return "pricing updates"
	case Notifications:
		return "notifications"
	}
	return string(c.Type)
}

// Action is what a request asks.
type Action string

// The requests a client sends.
const (
	Subscribe   Action = "subscribe"
	Unsubscribe Action = "unsubscribe"
)

// Request is a parsed client message.
type Request struct {
	Action  Action
	Channel Channel
	// All is an unsubscribe that names no channel: every subscription of the connection ends (the
	// existing clients send {"type":"unsubscribe"} before closing).
	All bool
	// Since is the seq of the last message the client has of the channel; nil: none.
	Since *int64
}

// RequestError is a request the server answers with {"type":"error"}: its message says what was
// wrong, and the connection stays usable.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

func requestErr(format string, a ...any) error {
	return &RequestError{Message: fmt.Sprintf(format, a...)}
}

// wire is a client message as sent: every field optional, so that what is missing or of the wrong
// type is answered by name.
type wire struct {
	Type        json.RawMessage `json:"type"`
	ChannelType json.RawMessage `json:"channelType"`
	Symbol      json.RawMessage `json:"symbol"`
	Resolution  json.RawMessage `json:"resolution"`
	Authority   json.RawMessage `json:"authority"`
	AuthorityID json.RawMessage `json:"authorityId"`
	AccountID   json.RawMessage `json:"accountId"`
	Since       json.RawMessage `json:"since"`
}

// ParseRequest reads one text frame. It accepts the spec's subscribe messages and, as the protocol's
// existing clients send them: a candle subscription without channelType (symbol and resolution
// alone), a numeric resolution, authorityId for authority, and an unsubscribe that names nothing.
// Symbols are checked by the caller, which knows the markets.
func ParseRequest(b []byte) (Request, error) {
	var w wire
	if !json.Valid(b) || bytes.TrimSpace(b)[0] != '{' {
		return Request{}, requestErr("message is not a JSON object")
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return Request{}, requestErr("message is not a JSON object")
	}
	typ, ok := str(w.Type)
	if !ok {
		return Request{}, requestErr("type must be a string: subscribe or unsubscribe")
	}
	var r Request
	switch Action(typ) {
	case Subscribe, Unsubscribe:
		r.Action = Action(typ)
	case "":
		return Request{}, requestErr("type is required: subscribe or unsubscribe")
	default:
		return Request{}, requestErr("unknown message type %q: want subscribe or unsubscribe", typ)
	}

	ct, ok := str(w.ChannelType)
	if !ok {
		return Request{}, requestErr("channelType must be a string")
	}
	if ct == "" {
		switch {
		case present(w.Symbol) && present(w.Resolution):
			ct = string(Candle) // the existing candle clients name no channel type
		case r.Action == Unsubscribe && !present(w.Symbol) && !present(w.Resolution) && !present(w.Authority) &&
			!present(w.AuthorityID) && !present(w.AccountID):
			r.All = true
			return r, nil
		default:
			return Request{}, requestErr("channelType is required: candle, markets, pricing or notifications")
		}
	}
	r.Channel.Type = ChannelType(ct)
	switch r.Channel.Type {
	case Candle:
		sym, ok := str(w.Symbol)
		if !ok || sym == "" {
			return Request{}, requestErr("candle: symbol is required, a market symbol such as SOL-PERP")
		}
		if len(sym) > 64 {
			return Request{}, requestErr("candle: symbol is too long")
		}
		res, ok := resolution(w.Resolution)
		if !ok {
			return Request{}, requestErr("candle: resolution is required, one of 1, 5, 15, 60, 240, D, W, M")
		}
		if _, err := events.ParseResolution(res); err != nil {
			return Request{}, requestErr("candle: unknown resolution %q: want one of 1, 5, 15, 60, 240, D, W, M", res)
		}
		r.Channel.Symbol, r.Channel.Resolution = sym, res
	case Markets, Pricing:
	case Notifications:
		raw := w.Authority
		if !present(raw) {
			raw = w.AuthorityID
		}
		auth, ok := str(raw)
		if !ok || auth == "" {
			return Request{}, requestErr("notifications: authority is required, a wallet address")
		}
		if !events.ValidPublicKey(auth) {
			return Request{}, requestErr("notifications: authority %q is not a wallet address (base58, 32 bytes)", clip(auth))
		}
		r.Channel.Authority = auth
	case Orderbook, User:
		return Request{}, requestErr("channel type %s is reserved: this API does not serve it", ct)
	default:
		return Request{}, requestErr("unknown channel type %q: want candle, markets, pricing or notifications", clip(ct))
	}
	if present(w.Since) {
		seq, err := parseSeq(w.Since)
		if err != nil {
			return Request{}, requestErr("since %s is not a seq: %v", clip(string(w.Since)), err)
		}
		r.Since = &seq
	}
	return r, nil
}

// parseSeq reads a seq: a non-negative integer, or the same digits as a string for clients that
// keep it as one.
func parseSeq(raw json.RawMessage) (int64, error) {
	text := string(raw)
	if s, ok := str(raw); ok && len(raw) > 0 && raw[0] == '"' {
		text = s
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("want the seq (a non-negative integer) of the last message received")
	}
	return n, nil
}

// present reports whether a field was sent with a value other than null.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// str reads a string field: ("", true) when absent or null, ok false when it is not a string.
func str(raw json.RawMessage) (string, bool) {
	if !present(raw) {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// resolution reads a resolution sent as a string or, by clients that keep it as a number, a number.
func resolution(raw json.RawMessage) (string, bool) {
	if !present(raw) {
		return "", false
	}
	if s, ok := str(raw); ok {
		return s, s != ""
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", false
	}
	if _, err := strconv.Atoi(n.String()); err != nil {
		return "", false
	}
	return n.String(), true
}

// clip keeps echoed input short.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
