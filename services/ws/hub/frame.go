package hub

import (
	"encoding/binary"
	"time"
)

// frame is one server-to-client WebSocket frame, its header and payload made once and shared by
// every queue it is put in: server frames are not masked, so the bytes are the same for everyone.
type frame struct {
	data []byte
	// ch is the channel the frame belongs to (nil: a reply to the connection itself), so that an
	// unsubscribe can take the channel's queued frames back.
	ch *channel
	// at is the topic timestamp of a live change (zero for snapshots and replies): what the fan-out
	// latency is measured from.
	at time.Time
	// seq is a live change's number in its channel, for replay and resume.
	seq      int64
	received time.Time
}

const (
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
)

// newFrame frames payload as one final frame of op.
func newFrame(op byte, payload []byte) *frame {
	return &frame{data: appendFrame(make([]byte, 0, len(payload)+10), op, payload)}
}

func appendFrame(b []byte, op byte, payload []byte) []byte {
	b = append(b, 0x80|op)
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n <= 0xffff:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

// closeFrame is a close frame with code and reason (at most 123 bytes).
func closeFrame(code int, reason string) *frame {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return newFrame(opClose, append(p, reason...))
}

var pingFrame = newFrame(opPing, nil)
