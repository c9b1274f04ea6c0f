package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/objstore"
)

// worker is one attempt of one job, running in its own goroutine.
type worker struct {
	attempt int32
	cancel  context.CancelFunc
	done    chan struct{} // closed after out is set
	out     outcome
	counter countingReader
}

type outcome struct {
	err     error
	records int64
	bytes   int64
	readyAt time.Time
}

func (w *worker) outcome() (outcome, bool) {
	select {
	case <-w.done:
		return w.out, true
	default:
		return outcome{}, false
	}
}

func (m *Machine) worker(uid types.UID) *worker {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workers[uid]
}

// start launches attempt of job unless every slot is taken.
func (m *Machine) start(job *v1alpha1.ExportJob, attempt int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runningLocked() >= m.cfg.MaxConcurrent {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{attempt: attempt, cancel: cancel, done: make(chan struct{})}
	m.workers[job.UID] = w
	go m.run(ctx, w, job.DeepCopy())
	return true
}

// stop cancels the job's attempt and waits for it to let go of its stream and upload.
func (m *Machine) stop(uid types.UID) {
	if w := m.worker(uid); w != nil {
		w.cancel()
		<-w.done
	}
}

// forget drops a worker whose outcome is recorded in the job's status.
func (m *Machine) forget(uid types.UID, w *worker) {
	w.cancel()
	<-w.done
	m.mu.Lock()
	if m.workers[uid] == w {
		delete(m.workers, uid)
	}
	m.mu.Unlock()
}

// Stop cancels every attempt and waits for them: the process is losing the lead or exiting, and a
// successor will redo unfinished attempts.
func (m *Machine) Stop() {
	m.mu.Lock()
	ws := make([]*worker, 0, len(m.workers))
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	m.workers = map[types.UID]*worker{}
	m.mu.Unlock()
	for _, w := range ws {
		w.cancel()
		<-w.done
	}
}

// run streams the job's CSV from its source into storage, then writes the manifest that marks the
// file complete. Nothing is held in memory beyond the store's part buffer.
func (m *Machine) run(ctx context.Context, w *worker, job *v1alpha1.ExportJob) {
	name := types.NamespacedName{Namespace: job.Namespace, Name: job.Name}
	defer m.wake(name)
	defer close(w.done)
	defer w.cancel()

	log := m.logger.With("job", name.String(), "attempt", w.attempt)
	w.out = m.attempt(ctx, w, job)
	switch {
	case w.out.err != nil && ctx.Err() != nil:
		log.Info("export attempt stopped", "reason", "cancelled, past its deadline, or the operator is stopping")
		return
	case w.out.err != nil:
		log.Warn("export attempt failed", "err", w.out.err)
		return
	}
	log.Info("export stored", "records", w.out.records, "bytes", w.out.bytes)
}

func (m *Machine) attempt(ctx context.Context, w *worker, job *v1alpha1.ExportJob) outcome {
	key := job.Status.ObjectKey
	stream, err := m.source.Open(ctx, job.Spec)
	if err != nil {
		return outcome{err: err}
	}
	defer stream.Body.Close()
	w.counter.r, w.counter.declared = stream.Body, stream.Declared

	size, err := m.store.Put(ctx, key, &w.counter, objstore.PutOptions{
		ContentType:        "text/csv; charset=utf-8",
		ContentDisposition: `attachment; filename="` + Filename(job) + `"`,
	})
	if err != nil {
		return outcome{err: fmt.Errorf("store %s: %w", key, err)}
	}
	records := w.counter.records()
	readyAt := m.clock.Now()
	meta := map[string]string{
		"records":  strconv.FormatInt(records, 10),
		"bytes":    strconv.FormatInt(size, 10),
		"ready-at": strconv.FormatInt(readyAt.UnixNano(), 10),
	}
	// The metadata is what a restart reads; the body is for people browsing the bucket.
	body, err := json.Marshal(struct {
		ObjectKey string    `json:"objectKey"`
		Records   int64     `json:"records"`
		Bytes     int64     `json:"bytes"`
		ReadyAt   time.Time `json:"readyAt"`
	}{key, records, size, readyAt.UTC()})
	if err != nil {
		return outcome{err: fmt.Errorf("encode manifest of %s: %w", key, err)}
	}
	if _, err := m.store.Put(ctx, manifestKey(job), bytes.NewReader(body), objstore.PutOptions{
		ContentType: "application/json", Metadata: meta,
	}); err != nil {
		return outcome{err: fmt.Errorf("store manifest of %s: %w", key, err)}
	}
	return outcome{records: records, bytes: size, readyAt: readyAt}
}
