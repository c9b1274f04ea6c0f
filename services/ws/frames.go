package ws

import (
	"encoding/json"
	"strconv"
)

// The server's messages, as the JSON text of one frame. Every message has type; messages of a
// channel carry seq: a change its number in the channel (one more than the change before it), an
// acknowledgement and an init the number of the last change the snapshot includes.

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}

func appendSeq(b []byte, seq int64) []byte {
	b = append(b, `,"seq":`...)
	return strconv.AppendInt(b, seq, 10)
}

// appendIdentity appends channelType and channel, and symbol and resolution for a candle channel.
func appendIdentity(b []byte, c Channel) []byte {
	b = append(b, `,"channelType":`...)
	b = appendString(b, string(c.Type))
	b = append(b, `,"channel":`...)
	b = appendString(b, c.Name())
	if c.Type == Candle {
		b = append(b, `,"symbol":`...)
		b = appendString(b, c.Symbol)
		b = append(b, `,"resolution":`...)
		b = appendString(b, c.Resolution)
	}
	return b
}

// AckMessage acknowledges a subscription, once, before anything else of the channel. resumed is nil
// for a subscription without since, else whether the missed messages follow (true) or an init does.
func AckMessage(c Channel, seq int64, resumed *bool) []byte {
	b := append(make([]byte, 0, 192), `{"type":"subscription","message":`...)
	b = appendString(b, "Subscribed to "+c.Describe())
	b = appendIdentity(b, c)
	b = appendSeq(b, seq)
	if resumed != nil {
		if *resumed {
			b = append(b, `,"resumed":true`...)
		} else {
			b = append(b, `,"resumed":false`...)
		}
	}
	return append(b, '}')
}

// UnsubscribedMessage acknowledges an unsubscribe: nothing of the channel follows it. A zero Channel
// acknowledges an unsubscribe from everything.
func UnsubscribedMessage(c Channel) []byte {
	b := append(make([]byte, 0, 128), `{"type":"unsubscribed","message":`...)
	if c.Type == "" {
		b = appendString(b, "Unsubscribed from every channel")
		return append(b, '}')
	}
	b = appendString(b, "Unsubscribed from "+c.Describe())
	b = appendIdentity(b, c)
	return append(b, '}')
}

// ErrorMessage is {"type":"error","message":...}.
func ErrorMessage(msg string) []byte {
	b := append(make([]byte, 0, 64+len(msg)), `{"type":"error","message":`...)
	b = appendString(b, msg)
	return append(b, '}')
}

// InitMessage is a channel's snapshot: for a candle channel data is the latest candle (null before
// the market's first trade at that resolution), repeated as candle for the clients that read that;
// for markets and pricing an array of every market's latest object. data must be valid JSON.
func InitMessage(c Channel, data []byte, seq int64) []byte {
	if data == nil {
		data = []byte("null")
	}
	b := append(make([]byte, 0, 160+2*len(data)), `{"type":"init"`...)
	b = appendIdentity(b, c)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	if c.Type == Candle {
		b = append(b, `,"candle":`...)
		b = append(b, data...)
	}
	b = appendSeq(b, seq)
	return append(b, '}')
}

// Prefix is the part of a channel's change messages that depends on the channel alone, made once per
// channel: {"type":"update","channelType":...,"channel":..., up to the data. Candle changes carry no
// channel fields (the spec's table, and what the existing clients parse), so theirs is empty.
func Prefix(c Channel) []byte {
	if c.Type == Candle {
		return nil
	}
	b := append([]byte(nil), `{"type":"update"`...)
	b = appendIdentity(b, c)
	return append(b, `,"data":`...)
}

// AppendCandleChange appends a candle channel's create or update message.
func AppendCandleChange(b []byte, typ string, candle, trades []byte, seq int64) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"candle":`...)
	b = append(b, candle...)
	b = append(b, `,"trades":`...)
	if len(trades) == 0 {
		trades = []byte("[]")
	}
	b = append(b, trades...)
	b = appendSeq(b, seq)
	return append(b, '}')
}

// AppendUpdate appends a markets, pricing or notifications update: prefix (Prefix of the channel),
// then data, which for markets and pricing is the array of the one changed market.
func AppendUpdate(b, prefix []byte, c Channel, data []byte, seq int64) []byte {
	b = append(b, prefix...)
	if c.Type == Notifications {
		b = append(b, data...)
	} else {
		b = append(b, '[')
		b = append(b, data...)
		b = append(b, ']')
	}
	b = appendSeq(b, seq)
	return append(b, '}')
}
