package indexer

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/platform/chain/rpc"
)

// fetched is the block of slot.
type fetched struct {
	slot  uint64
	block *rpc.Block
}

// fetch reads the blocks of slots with InFlight calls at once and delivers them in the order of
// slots. It reads at most a few windows ahead of the reader, so that a slow block at the head
// holds back memory, not just order. The channel closes early only when ctx ends.
func (idx *Indexer) fetch(ctx context.Context, slots []uint64) <-chan fetched {
	out := make(chan fetched)
	// pending holds each slot's answer channel in slot order; its capacity is the read-ahead.
	pending := make(chan chan fetched, 4*idx.cfg.InFlight)
	active := make(chan struct{}, idx.cfg.InFlight)
	go func() {
		defer close(pending)
		for _, slot := range slots {
			res := make(chan fetched, 1)
			select {
			case pending <- res:
			case <-ctx.Done():
				return
			}
			select {
			case active <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() {
				defer func() { <-active }()
				res <- fetched{slot: slot, block: idx.readBlock(ctx, slot)}
			}()
		}
	}()
	go func() {
		defer close(out)
		for res := range pending {
			select {
			case f := <-res:
				if f.block == nil {
					return // ctx ended
				}
				select {
				case out <- f:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// readBlock reads the block of a slot getBlocks listed until it has it or ctx ends (nil then).
// The client retries what passes by itself; what is left, even a "skipped" answer for a slot the
// node listed, is read again after a pause: a listed slot is never passed over.
func (idx *Indexer) readBlock(ctx context.Context, slot uint64) *rpc.Block {
	var b *rpc.Block
	err := retry(ctx, idx.log, fmt.Sprintf("read the block of slot %d", slot), 500*time.Millisecond, 30*time.Second, func() error {
		var err error
		if b, err = idx.rpc.Block(ctx, slot, rpc.Finalized); err != nil && ctx.Err() == nil {
			idx.m.slotRetries.Inc()
		}
		return err
	})
	if err != nil {
		return nil
	}
	return b
}
