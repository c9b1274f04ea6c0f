package hub

import (
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/services/ws"
)

// channel is one stream's state: what its init needs, its subscribers, the last ReplayWindow of its
// messages and where it stands in its topic. Its mutex orders everything that happens to it: a
// subscriber added under it gets the snapshot as of the last message applied, and every message
// after, exactly once.
type channel struct {
	lk     sync.Mutex
	id     ws.Channel
	name   string
	topic  string
	prefix []byte
	// keyed channels (candle, notifications) live in the one partition their key hashes to: home,
	// -1 until a message shows which.
	keyed bool
	home  int

	// pos is the channel's Position: for a keyed channel with a home, that partition's offset after
	// the channel's last message; otherwise every partition's offset.
	pos ws.Position
	// floor is, per partition, the oldest offset from which the replay buffer holds every message of
	// the channel: the replica's start, or past the last evicted message.
	floor ws.Position

	subs   []*subscription
	replay []*frame
	dead   bool // removed from the hub: lookups must start again

	// candle: the newest candle and its bucket.
	candle   []byte
	candleTs int64
	// markets, pricing: each market's latest object, in the order first seen.
	items map[string]int
	order [][]byte
}

type subscription struct {
	c  *Client
	ch *channel
	// skip holds back, per partition, offsets below which the client already has the messages: it
	// resumed from a replica that had read further than this one.
	skip ws.Position
}

// snapshot is the init's data: null before a candle channel's first candle.
func (ch *channel) snapshot() []byte {
	switch ch.id.Type {
	case ws.Candle:
		return ch.candle
	case ws.Markets, ws.Pricing:
		n := 2
		for _, it := range ch.order {
			n += len(it) + 1
		}
		b := make([]byte, 0, n)
		b = append(b, '[')
		for i, it := range ch.order {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, it...)
		}
		return append(b, ']')
	}
	return nil
}

// setItem records a market's latest object.
func (ch *channel) setItem(symbol string, raw []byte) {
	if ch.items == nil {
		ch.items = map[string]int{}
	}
	if i, ok := ch.items[symbol]; ok {
		ch.order[i] = raw
		return
	}
	ch.items[symbol] = len(ch.order)
	ch.order = append(ch.order, raw)
}

// advance records a message at offset of partition.
func (ch *channel) advance(partition int, offset int64) {
	if ch.keyed {
		if ch.home != partition {
			// The first message shows the key's partition; a later move means the topic was
			// repartitioned, after which only this partition's offsets mean anything.
			ch.home = partition
		}
		ch.pos = ws.Position{{Partition: partition, Offset: offset + 1}}
		return
	}
	ch.pos = ch.pos.With(partition, offset+1)
}

// resumable reports whether every message of the channel after since is in the replay buffer, and
// which offsets to hold back because the client has them already.
func (ch *channel) resumable(since ws.Position) (ok bool, skip ws.Position) {
	check := func(p int) bool {
		off, ok := since.Of(p)
		if !ok {
			return false
		}
		fl, _ := ch.floor.Of(p)
		if off < fl {
			return false
		}
		if cur, _ := ch.pos.Of(p); off > cur {
			skip = skip.With(p, off)
		}
		return true
	}
	if ch.keyed && ch.home >= 0 {
		return check(ch.home), skip
	}
	for _, fl := range ch.floor {
		if !check(fl.Partition) {
			return false, nil
		}
	}
	return true, skip
}

// missed are the buffered messages after since.
func (ch *channel) missed(since ws.Position) []*frame {
	var out []*frame
	for _, f := range ch.replay {
		if off, ok := since.Of(f.partition); ok && f.offset >= off {
			out = append(out, f)
		}
	}
	return out
}

// evict drops buffered messages older than before, or beyond max, raising the floor past them.
func (ch *channel) evict(before time.Time, max int) {
	n := 0
	for n < len(ch.replay) && (ch.replay[n].received.Before(before) || len(ch.replay)-n > max) {
		f := ch.replay[n]
		ch.floor = ch.floor.With(f.partition, f.offset+1)
		n++
	}
	if n == 0 {
		return
	}
	clear(ch.replay[:n])
	ch.replay = ch.replay[n:]
	if len(ch.replay) == 0 {
		ch.replay = nil
	}
}

func (ch *channel) removeSub(s *subscription) bool {
	i := slices.Index(ch.subs, s)
	if i < 0 {
		return false
	}
	last := len(ch.subs) - 1
	ch.subs[i] = ch.subs[last]
	ch.subs[last] = nil
	ch.subs = ch.subs[:last]
	return true
}
