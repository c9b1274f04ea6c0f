package ws

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Position is where a channel stands in the edge topic that feeds it: for each partition of the
// topic that carries the channel, the offset of the next message. Every replica reads the same log,
// so a position taken on one replica means the same messages on any other: it is the seq every
// message and init carries, and the since a resuming client sends back.
//
// A candle channel (its messages keyed by symbol) and a notifications channel (keyed by authority)
// live in one partition each; markets and pricing span every partition of their topics, so their
// position has an offset for each. On the wire it is "partition:offset" pairs joined by commas, in
// partition order, and clients treat it as opaque.
type Position []PartitionOffset

// PartitionOffset is the offset of the next message of one partition.
type PartitionOffset struct {
	Partition int
	Offset    int64
}

// Of returns the offset of partition p and whether the position has it.
func (p Position) Of(partition int) (int64, bool) {
	for _, po := range p {
		if po.Partition == partition {
			return po.Offset, true
		}
	}
	return 0, false
}

// With returns a copy of p with partition's offset set (added in order when missing).
func (p Position) With(partition int, offset int64) Position {
	out := make(Position, 0, len(p)+1)
	added := false
	for _, po := range p {
		switch {
		case po.Partition == partition:
			out = append(out, PartitionOffset{partition, offset})
			added = true
		case po.Partition > partition && !added:
			out = append(out, PartitionOffset{partition, offset}, po)
			added = true
		default:
			out = append(out, po)
		}
	}
	if !added {
		out = append(out, PartitionOffset{partition, offset})
	}
	return out
}

// AppendText appends the wire form.
func (p Position) AppendText(b []byte) []byte {
	for i, po := range p {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(po.Partition), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, po.Offset, 10)
	}
	return b
}

func (p Position) String() string { return string(p.AppendText(nil)) }

// maxPartitions bounds what a client may send as a position.
const maxPartitions = 1024

// ParsePosition reads the wire form: partitions ascending, each once, offsets not negative.
func ParsePosition(s string) (Position, error) {
	if s == "" {
		return nil, errors.New("empty")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxPartitions {
		return nil, errors.New("too many partitions")
	}
	out := make(Position, 0, len(parts))
	for _, part := range parts {
		ps, os, ok := strings.Cut(part, ":")
		if !ok {
			return nil, errors.New("want partition:offset pairs")
		}
		pn, err := strconv.Atoi(ps)
		if err != nil || pn < 0 || pn >= maxPartitions {
			return nil, errors.New("bad partition")
		}
		off, err := strconv.ParseInt(os, 10, 64)
		if err != nil || off < 0 {
			return nil, errors.New("bad offset")
		}
		if len(out) > 0 && out[len(out)-1].Partition >= pn {
			return nil, errors.New("partitions out of order")
		}
		out = append(out, PartitionOffset{pn, off})
	}
	return slices.Clip(out), nil
}
