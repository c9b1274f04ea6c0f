package hub

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/tidemark/tidemark/services/ws"
)

// channel is one stream's state: what its init needs, its subscribers, the last ReplayWindow of its
// messages and the seq it stands at. Its mutex orders everything that happens to it: a subscriber
// added under it gets the snapshot as of the last message applied, and every message after, exactly
// once.
type channel struct {
	lk     sync.Mutex
	id     ws.Channel
	name   string
	topic  string
	prefix []byte

	// seq is the seq of the last message applied, or of the snapshot the channel was warmed from:
	// what its state includes, and what its acknowledgement and init carry. known: a message or a
	// numbered snapshot set it; until then the replica knows nothing of the channel's numbers (its
	// seq says 0) and takes the first message's as they come.
	seq   int64
	known bool
	// floor is the seq from which the replay buffer holds every message of the channel: messages
	// floor+1 up to seq are in it. A client resuming from since >= floor is served from it.
	floor int64

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
	// skip holds back messages up to this seq, which the client has already: it resumed from a
	// replica that had read further than this one.
	skip int64
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

// maxAhead is how far past the channel's seq a since may be and still resume: a replica reads a
// moment behind another, so a client coming from one may have seen a few messages this one has not
// yet; a since far beyond is not a seq of this channel (a client's mistake, or numbers that started
// again after the producer's database was restored), and waiting for it would stall the client.
const maxAhead = 1000

// resumable reports whether every message of the channel after since is in the replay buffer or yet
// to come, and up to which seq to hold back messages because the client has them already.
func (ch *channel) resumable(since int64) (ok bool, skip int64) {
	switch {
	case !ch.known:
		return false, 0
	case since < ch.floor:
		return false, 0
	case since > ch.seq+maxAhead:
		return false, 0
	case since > ch.seq:
		return true, since
	}
	return true, 0
}

// adopt takes seq, the channel's seq as its producer read it for a subscription (a wallet's count of
// notifications, read from the notify service), and returns the seq to acknowledge the subscription
// with and the buffered messages that must follow the acknowledgement. A channel the replica knows
// nothing of starts at seq: its next message is seq+1, and one at or below seq (committed before the
// read, published after) is a repeat. A channel that became known while seq was being read has had
// its first messages meanwhile: those after seq are in the replay buffer from floor on, and follow
// the acknowledgement at seq, so that none is lost and none doubled (the subscription is added after
// them, under the channel's lock). A seq the channel is at or past the buffer of, or beyond its own
// (messages the replica has yet to read, which will come), changes nothing: the acknowledgement
// says where the channel is.
func (ch *channel) adopt(seq int64) (ack int64, after []*frame) {
	switch {
	case !ch.known:
		ch.seq, ch.known = seq, true
		ch.restart(seq)
		return seq, nil
	case seq < ch.seq && seq >= ch.floor:
		return seq, ch.missed(seq)
	}
	return ch.seq, nil
}

// missed are the buffered messages after since.
func (ch *channel) missed(since int64) []*frame {
	i, _ := slices.BinarySearchFunc(ch.replay, since+1, func(f *frame, seq int64) int { return cmp.Compare(f.seq, seq) })
	return ch.replay[i:]
}

// restart drops the replay buffer: the channel's messages before seq are not all known to the replica
// (a gap in the numbers, or a snapshot newer than anything it read), so resuming starts at seq.
func (ch *channel) restart(seq int64) {
	clear(ch.replay)
	ch.replay = nil
	ch.floor = seq
}

// evict drops buffered messages older than before, or beyond max, raising the floor past them.
func (ch *channel) evict(before time.Time, max int) {
	n := 0
	for n < len(ch.replay) && (ch.replay[n].received.Before(before) || len(ch.replay)-n > max) {
		ch.floor = ch.replay[n].seq
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
