// Package export is the ExportJob state machine, shared by the two drivers that run it: the
// controller in a cluster (operator/internal/controller) and the local runner of the dev stack
// (operator/local). A driver hands a job to Machine.Sync whenever something may have changed, writes
// back the status Sync computed, records the events it returned and comes back after RequeueAfter.
//
// The machine keeps nothing that a restart cannot rebuild. The object key is derived from the job,
// the stored file and its manifest are written in that order, and a job found Running with no
// worker either finds its manifest (and becomes Ready with it) or starts a new attempt that
// overwrites the same key. So a restart or a leader change never leaves a job stuck in Running,
// never stores two files for one job and never reports Ready without the file.
package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/objstore"
)

// Condition reasons of the Succeeded condition.
const (
	ReasonPending          = "Pending"
	ReasonQueued           = "Queued"
	ReasonRunning          = "Running"
	ReasonBackingOff       = "BackingOff"
	ReasonReady            = "Ready"
	ReasonSourceRejected   = "SourceRejected"
	ReasonBackoffLimit     = "BackoffLimitExceeded"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonCancelled        = "Cancelled"
	ReasonExpired          = "Expired"
)

// Config tunes the machine; zero values take the defaults.
type Config struct {
	// MaxConcurrent caps the exports running at once in this process (default 4).
	MaxConcurrent int
	// URLLifetime is how long a stored file stays downloadable after it is ready (default 8 h).
	URLLifetime time.Duration
	// BackoffBase is the wait after the first failed attempt, doubled after each further one up to
	// BackoffMax (defaults 10 s and 5 min).
	BackoffBase, BackoffMax time.Duration
	// ProgressInterval is how often a running job's progress is reported (default 1 s).
	ProgressInterval time.Duration
	// QueuedRetry is how soon a job waiting for a free slot looks again (default 2 s).
	QueuedRetry time.Duration
}

func (c *Config) defaults() {
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 4
	}
	if c.URLLifetime <= 0 {
		c.URLLifetime = 8 * time.Hour
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = 10 * time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = time.Second
	}
	if c.QueuedRetry <= 0 {
		c.QueuedRetry = 2 * time.Second
	}
}

// Event is a transition worth telling the job's owner about (a Kubernetes Event in a cluster).
type Event struct {
	Warning bool
	Reason  string
	Message string
}

// Result is what a driver does after Sync: record Events (after the status is written), delete
// the job when Delete is set, and sync again after RequeueAfter (zero: only on the next change).
type Result struct {
	RequeueAfter time.Duration
	Delete       bool
	Events       []Event
}

// Machine runs export attempts and decides each job's status. It is safe for concurrent use; one
// Machine serves all jobs of a process.
type Machine struct {
	cfg     Config
	store   objstore.Store
	source  Source
	clock   clock.PassiveClock
	logger  *slog.Logger
	metrics *Metrics
	wake    func(types.NamespacedName)

	mu      sync.Mutex
	workers map[types.UID]*worker
}

// Deps are the machine's collaborators. Wake is called when a job needs a Sync that no status
// change will trigger (its attempt finished); it must not block.
type Deps struct {
	Store   objstore.Store
	Source  Source
	Clock   clock.PassiveClock // nil: the real clock
	Logger  *slog.Logger
	Metrics *Metrics // nil: not measured
	Wake    func(types.NamespacedName)
}

// NewMachine builds a machine.
func NewMachine(cfg Config, d Deps) *Machine {
	cfg.defaults()
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Wake == nil {
		d.Wake = func(types.NamespacedName) {}
	}
	return &Machine{
		cfg: cfg, store: d.Store, source: d.Source, clock: d.Clock, logger: d.Logger, metrics: d.Metrics,
		wake: d.Wake, workers: map[types.UID]*worker{},
	}
}

// ObjectKey is where a job's file is stored: one folder per job (the UID keeps a job recreated
// under the same name apart from its predecessor) holding the CSV and its manifest.
func ObjectKey(job *v1alpha1.ExportJob) string {
	return fmt.Sprintf("exports/%s/%s/%s-%d-%d.csv", job.Spec.Authority, job.UID, job.Spec.FileType, job.Spec.From, job.Spec.To)
}

// manifestKey is written after the file is complete; its metadata holds the counts and the time
// the file became ready, so a restarted operator can finish the job without uploading again.
func manifestKey(job *v1alpha1.ExportJob) string {
	return fmt.Sprintf("exports/%s/%s/manifest.json", job.Spec.Authority, job.UID)
}

// Filename is the download name of a job's file.
func Filename(job *v1alpha1.ExportJob) string {
	return fmt.Sprintf("%s-%s-%d-%d.csv", job.Spec.FileType, job.Spec.Authority, job.Spec.From, job.Spec.To)
}

// Sync moves job (a copy the driver owns) on by one look: it updates job.Status in place and says
// what the driver does next. Errors are transient (storage unreachable); the driver retries.
func (m *Machine) Sync(ctx context.Context, job *v1alpha1.ExportJob) (Result, error) {
	now := m.clock.Now()
	st := &job.Status
	if st.ObjectKey == "" {
		st.ObjectKey = ObjectKey(job)
	}
	if st.Phase == "" {
		st.Phase = v1alpha1.PhasePending
		m.condition(job, metav1.ConditionUnknown, ReasonPending, "waiting to start")
	}
	if st.Phase.Finished() {
		if w := m.worker(job.UID); w != nil {
			m.forget(job.UID, w)
		}
	}
	switch st.Phase {
	case v1alpha1.PhasePending, v1alpha1.PhaseRunning:
		return m.syncActive(ctx, job, now)
	case v1alpha1.PhaseReady:
		if st.ExpiresAt != nil && !now.Before(st.ExpiresAt.Time) {
			if err := m.removeObjects(ctx, job); err != nil {
				return Result{}, err
			}
			st.Phase = v1alpha1.PhaseExpired
			m.condition(job, metav1.ConditionFalse, ReasonExpired, "the download window ended and the file was deleted")
			return m.finished(job, now, Event{Reason: ReasonExpired, Message: "file deleted from storage at expiry"}), nil
		}
		var res Result
		if st.ExpiresAt != nil {
			res.RequeueAfter = st.ExpiresAt.Sub(now)
		}
		return res, nil
	default:
		return m.finished(job, now), nil
	}
}

// finished schedules the deletion of a job that reached its last phase.
func (m *Machine) finished(job *v1alpha1.ExportJob, now time.Time, events ...Event) Result {
	st := job.Status
	var at time.Time
	switch {
	case st.Phase == v1alpha1.PhaseExpired && st.ExpiresAt != nil:
		at = st.ExpiresAt.Time
	case st.CompletedAt != nil:
		at = st.CompletedAt.Time
	default:
		at = now
	}
	ttl := 7 * 24 * time.Hour
	if job.Spec.TTLSecondsAfterFinished != nil {
		ttl = time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second
	}
	res := Result{Events: events}
	if left := at.Add(ttl).Sub(now); left > 0 {
		res.RequeueAfter = left
	} else {
		res.Delete = true
	}
	return res
}

func (m *Machine) syncActive(ctx context.Context, job *v1alpha1.ExportJob, now time.Time) (Result, error) {
	st := &job.Status
	w := m.worker(job.UID)

	if job.Spec.Cancel {
		m.stop(job.UID)
		if err := m.removeObjects(ctx, job); err != nil {
			return Result{}, err
		}
		return m.end(job, now, v1alpha1.PhaseCancelled, ReasonCancelled, "cancelled by request", false), nil
	}
	if w != nil && w.attempt >= st.Attempts {
		// A file stored just before the deadline counts: it is complete and its manifest written.
		if out, done := w.outcome(); done && out.err == nil {
			st.Attempts = w.attempt
			return m.applyOutcome(job, now, w, out), nil
		}
	}
	if deadline, ok := m.deadline(job); ok && !now.Before(deadline) {
		m.stop(job.UID)
		if err := m.removeObjects(ctx, job); err != nil {
			return Result{}, err
		}
		msg := fmt.Sprintf("the job ran past its activeDeadlineSeconds (%ds)", *job.Spec.ActiveDeadlineSeconds)
		return m.end(job, now, v1alpha1.PhaseFailed, ReasonDeadlineExceeded, msg, true), nil
	}

	if w != nil {
		out, done := w.outcome()
		switch {
		case w.attempt < st.Attempts, done && st.Phase == v1alpha1.PhasePending && w.attempt == st.Attempts:
			// The status already moved past this worker's attempt: its outcome was applied.
			m.forget(job.UID, w)
		case done:
			st.Attempts = w.attempt
			return m.applyOutcome(job, now, w, out), nil
		default:
			st.Attempts = w.attempt
			st.Phase = v1alpha1.PhaseRunning
			st.Progress = strconv.FormatInt(w.counter.records(), 10) + " rows"
			m.condition(job, metav1.ConditionUnknown, ReasonRunning, fmt.Sprintf("attempt %d running", w.attempt))
			return Result{RequeueAfter: m.untilDeadline(job, now, m.cfg.ProgressInterval)}, nil
		}
	}

	if st.Phase == v1alpha1.PhaseRunning {
		// Running with no worker here: this process restarted or took over the lead mid-attempt.
		// The attempt either finished storing (its manifest says so) or is lost and counted.
		info, err := m.store.Stat(ctx, manifestKey(job))
		switch {
		case err == nil:
			return m.readyFromManifest(job, now, info), nil
		case !errors.Is(err, objstore.ErrNotFound):
			return Result{}, fmt.Errorf("look for the manifest of %s: %w", job.Name, err)
		}
		if st.Attempts > backoffLimit(job) {
			m.metrics.failed(ReasonBackoffLimit)
			return m.end(job, now, v1alpha1.PhaseFailed, ReasonBackoffLimit,
				fmt.Sprintf("attempt %d was interrupted and no retries are left", st.Attempts), true), nil
		}
	}

	if st.NextAttemptAt != nil && now.Before(st.NextAttemptAt.Time) {
		return Result{RequeueAfter: m.untilDeadline(job, now, st.NextAttemptAt.Sub(now))}, nil
	}
	attempt := st.Attempts + 1
	if !m.start(job, attempt) {
		st.Phase = v1alpha1.PhasePending
		m.condition(job, metav1.ConditionUnknown, ReasonQueued,
			fmt.Sprintf("waiting for one of %d export slots", m.cfg.MaxConcurrent))
		return Result{RequeueAfter: m.untilDeadline(job, now, m.cfg.QueuedRetry)}, nil
	}
	st.Attempts = attempt
	st.Phase = v1alpha1.PhaseRunning
	st.NextAttemptAt = nil
	st.Progress = "0 rows"
	if st.StartedAt == nil {
		st.StartedAt = &metav1.Time{Time: now}
	}
	m.condition(job, metav1.ConditionUnknown, ReasonRunning, fmt.Sprintf("attempt %d running", attempt))
	return Result{
		RequeueAfter: m.untilDeadline(job, now, m.cfg.ProgressInterval),
		Events:       []Event{{Reason: "Started", Message: fmt.Sprintf("attempt %d started", attempt)}},
	}, nil
}

// applyOutcome turns a finished attempt into Ready, a retry or a failure.
func (m *Machine) applyOutcome(job *v1alpha1.ExportJob, now time.Time, w *worker, out outcome) Result {
	st := &job.Status
	if out.err == nil {
		return m.ready(job, now, out.records, out.bytes, out.readyAt)
	}
	st.FailureReason = out.err.Error()
	st.Progress = ""
	if errors.Is(out.err, ErrPermanent) {
		m.metrics.failed(ReasonSourceRejected)
		return m.end(job, now, v1alpha1.PhaseFailed, ReasonSourceRejected, out.err.Error(), true)
	}
	if w.attempt > backoffLimit(job) {
		m.metrics.failed(ReasonBackoffLimit)
		return m.end(job, now, v1alpha1.PhaseFailed, ReasonBackoffLimit,
			fmt.Sprintf("attempt %d failed and no retries are left: %v", w.attempt, out.err), true)
	}
	m.metrics.failed("AttemptFailed")
	wait := m.cfg.BackoffBase << (w.attempt - 1)
	if wait <= 0 || wait > m.cfg.BackoffMax {
		wait = m.cfg.BackoffMax
	}
	st.Phase = v1alpha1.PhasePending
	st.NextAttemptAt = &metav1.Time{Time: now.Add(wait)}
	m.condition(job, metav1.ConditionUnknown, ReasonBackingOff,
		fmt.Sprintf("attempt %d failed, retrying in %s", w.attempt, wait))
	return Result{
		RequeueAfter: m.untilDeadline(job, now, wait),
		Events: []Event{{Warning: true, Reason: "AttemptFailed",
			Message: fmt.Sprintf("attempt %d failed, retrying in %s: %v", w.attempt, wait, out.err)}},
	}
}

func (m *Machine) ready(job *v1alpha1.ExportJob, now time.Time, records, size int64, readyAt time.Time) Result {
	st := &job.Status
	st.Phase = v1alpha1.PhaseReady
	st.RecordCount, st.Bytes = records, size
	st.Progress = strconv.FormatInt(records, 10) + " rows"
	st.FailureReason = ""
	st.NextAttemptAt = nil
	st.ReadyAt = &metav1.Time{Time: readyAt}
	st.CompletedAt = &metav1.Time{Time: readyAt}
	st.ExpiresAt = &metav1.Time{Time: readyAt.Add(m.cfg.URLLifetime)}
	m.condition(job, metav1.ConditionTrue, ReasonReady, fmt.Sprintf("%d records stored", records))
	m.metrics.ready(st, records, size)
	return Result{
		RequeueAfter: st.ExpiresAt.Sub(now),
		Events: []Event{{Reason: ReasonReady,
			Message: fmt.Sprintf("stored %d records (%d bytes) at %s", records, size, st.ObjectKey)}},
	}
}

func (m *Machine) readyFromManifest(job *v1alpha1.ExportJob, now time.Time, info objstore.Info) Result {
	records, _ := strconv.ParseInt(info.Metadata["records"], 10, 64)
	size, _ := strconv.ParseInt(info.Metadata["bytes"], 10, 64)
	readyUnix, err := strconv.ParseInt(info.Metadata["ready-at"], 10, 64)
	readyAt := time.Unix(0, readyUnix)
	if err != nil {
		readyAt = info.LastModified
	}
	return m.ready(job, now, records, size, readyAt)
}

// end moves job to a last phase other than Ready.
func (m *Machine) end(job *v1alpha1.ExportJob, now time.Time, phase v1alpha1.Phase, reason, msg string, warning bool) Result {
	st := &job.Status
	st.Phase = phase
	st.Progress = ""
	st.NextAttemptAt = nil
	st.CompletedAt = &metav1.Time{Time: now}
	if phase == v1alpha1.PhaseFailed {
		st.FailureReason = msg
	}
	m.condition(job, metav1.ConditionFalse, reason, msg)
	m.metrics.finished(st, phase)
	return m.finished(job, now, Event{Warning: warning, Reason: reason, Message: msg})
}

func (m *Machine) condition(job *v1alpha1.ExportJob, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
		Type: v1alpha1.ConditionSucceeded, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: job.Generation, LastTransitionTime: metav1.NewTime(m.clock.Now()),
	})
}

func (m *Machine) deadline(job *v1alpha1.ExportJob) (time.Time, bool) {
	if job.Status.StartedAt == nil || job.Spec.ActiveDeadlineSeconds == nil {
		return time.Time{}, false
	}
	return job.Status.StartedAt.Add(time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// untilDeadline shortens a wait so that the deadline is noticed when it passes.
func (m *Machine) untilDeadline(job *v1alpha1.ExportJob, now time.Time, d time.Duration) time.Duration {
	if deadline, ok := m.deadline(job); ok {
		if left := deadline.Sub(now); left < d {
			return max(left, time.Millisecond)
		}
	}
	return d
}

func backoffLimit(job *v1alpha1.ExportJob) int32 {
	if job.Spec.BackoffLimit == nil {
		return 3
	}
	return *job.Spec.BackoffLimit
}

// removeObjects deletes the file and its manifest; both may be missing.
func (m *Machine) removeObjects(ctx context.Context, job *v1alpha1.ExportJob) error {
	return RemoveObjects(ctx, m.store, job)
}

// RemoveObjects deletes the job's file and its manifest from store; both may be missing.
func RemoveObjects(ctx context.Context, store objstore.Store, job *v1alpha1.ExportJob) error {
	key := job.Status.ObjectKey
	if key == "" {
		key = ObjectKey(job)
	}
	// The manifest goes first: without it nobody takes the file for complete.
	if err := store.Delete(ctx, manifestKey(job)); err != nil {
		return fmt.Errorf("delete manifest of %s: %w", job.Name, err)
	}
	if err := store.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// Finalize stops the job's attempt and deletes its stored objects; a driver calls it before the job
// itself goes away.
func (m *Machine) Finalize(ctx context.Context, job *v1alpha1.ExportJob) error {
	m.stop(job.UID)
	if err := m.removeObjects(ctx, job); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.workers, job.UID)
	m.mu.Unlock()
	return nil
}

// Running is the number of attempts in progress in this process.
func (m *Machine) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runningLocked()
}

func (m *Machine) runningLocked() int {
	n := 0
	for _, w := range m.workers {
		if _, done := w.outcome(); !done {
			n++
		}
	}
	return n
}
