package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// signatureRecorder records used signatures in batches: while one INSERT is on its way, the
// signatures of the requests that arrive meanwhile wait and go together in the next. Alone, a request
// waits for nothing more than its own INSERT; under load one round trip and one commit serve many.
type signatureRecorder struct {
	pool  *pgxpool.Pool
	table string

	mu      sync.Mutex
	queue   []*signatureUse
	running bool // a goroutine is flushing the queue
}

type signatureUse struct {
	sig      []byte
	signedAt int64
	expires  int64
	done     chan signatureResult // buffered: the flusher never waits on a request that left
}

type signatureResult struct {
	fresh bool
	err   error
}

// flushTimeout bounds one batch's INSERT; it serves several requests, so no request's context
// can end it.
const flushTimeout = 10 * time.Second

// use records sig, signed at signedAt, until expires and reports whether it was new.
func (r *signatureRecorder) use(ctx context.Context, sig []byte, signedAt, expires int64) (bool, error) {
	u := &signatureUse{sig: sig, signedAt: signedAt, expires: expires, done: make(chan signatureResult, 1)}
	r.mu.Lock()
	r.queue = append(r.queue, u)
	if !r.running {
		r.running = true
		go r.flushAll()
	}
	r.mu.Unlock()
	select {
	case res := <-u.done:
		return res.fresh, res.err
	case <-ctx.Done():
		// The signature may still be recorded: the request failed, its client signs anew.
		return false, ctx.Err()
	}
}

// flushAll writes batches until the queue is empty.
func (r *signatureRecorder) flushAll() {
	for {
		r.mu.Lock()
		batch := r.queue
		r.queue = nil
		if len(batch) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.flush(batch)
	}
}

// flush inserts a batch's signatures in one statement; of the uses of one signature in it, the
// first is the fresh one.
func (r *signatureRecorder) flush(batch []*signatureUse) {
	first := make(map[string]*signatureUse, len(batch))
	sigs, signedAt, expires := make([][]byte, 0, len(batch)), make([]int64, 0, len(batch)), make([]int64, 0, len(batch))
	for _, u := range batch {
		if _, seen := first[string(u.sig)]; seen {
			continue
		}
		first[string(u.sig)] = u
		sigs, signedAt, expires = append(sigs, u.sig), append(signedAt, u.signedAt), append(expires, u.expires)
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	fresh := make(map[string]bool, len(sigs))
	rows, err := r.pool.Query(ctx, `INSERT INTO `+r.table+` (signed_at, signature, expires_at)
		SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::bigint[]) ON CONFLICT DO NOTHING RETURNING signature`, signedAt, sigs, expires)
	if err == nil {
		var sig []byte
		for rows.Next() {
			if err = rows.Scan(&sig); err != nil {
				break
			}
			fresh[string(sig)] = true
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		err = fmt.Errorf("record %d used signatures: %w", len(sigs), err)
	}
	for _, u := range batch {
		u.done <- signatureResult{fresh: err == nil && first[string(u.sig)] == u && fresh[string(u.sig)], err: err}
	}
}
