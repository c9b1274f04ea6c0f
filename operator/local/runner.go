// Package local runs ExportJobs without a cluster, for the dev stack: jobs live in memory and the
// same export.Machine that the controller drives decides every step.
package local

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
)

// Namespace is the namespace local jobs report.
const Namespace = "local"

// Runner keeps jobs in memory and drives them with an export.Machine. It implements export.Jobs.
type Runner struct {
	machine *export.Machine
	clock   clock.PassiveClock
	logger  *slog.Logger
	wake    chan struct{}

	mu   sync.Mutex
	seq  int
	jobs map[string]*entry
}

type entry struct {
	job *v1alpha1.ExportJob
	due time.Time // next Sync; zero: on the next wake
}

// New builds a runner. reg receives the export metrics (nil: none).
func New(cfg export.Config, deps export.Deps, reg prometheus.Registerer) (*Runner, error) {
	r := &Runner{clock: deps.Clock, logger: deps.Logger, wake: make(chan struct{}, 1), jobs: map[string]*entry{}}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	deps.Clock = r.clock
	deps.Logger = r.logger
	deps.Wake = func(types.NamespacedName) { r.poke() }
	if reg != nil {
		m, err := export.NewMetrics(reg, r.phases)
		if err != nil {
			return nil, fmt.Errorf("register export metrics: %w", err)
		}
		deps.Metrics = m
	}
	r.machine = export.NewMachine(cfg, deps)
	return r, nil
}

// Wake makes the runner sync every job now rather than at its scheduled time (a test whose clock
// jumped, an operator's nudge).
func (r *Runner) Wake() { r.poke() }

func (r *Runner) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Create implements export.Jobs.
func (r *Runner) Create(_ context.Context, name string, spec v1alpha1.ExportJobSpec) (*v1alpha1.ExportJob, error) {
	if err := export.ValidateName(name); err != nil {
		return nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", export.ErrInvalid, err)
	}
	spec.Default()
	now := r.clock.Now()
	r.mu.Lock()
	if e, ok := r.jobs[name]; ok {
		defer r.mu.Unlock()
		return e.job.DeepCopy(), nil
	}
	r.seq++
	if name == "" {
		name = "export-" + strconv.FormatInt(now.UnixNano(), 36) + "-" + strconv.Itoa(r.seq)
	}
	job := &v1alpha1.ExportJob{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: Namespace, Name: name, UID: types.UID(name), Generation: 1,
			CreationTimestamp: metav1.NewTime(now),
			Labels:            map[string]string{v1alpha1.AuthorityLabel: string(spec.Authority)},
		},
		Spec: spec,
	}
	r.jobs[name] = &entry{job: job}
	r.mu.Unlock()
	r.poke()
	return job.DeepCopy(), nil
}

// List implements export.Jobs.
func (r *Runner) List(_ context.Context, authority string) ([]v1alpha1.ExportJob, error) {
	r.mu.Lock()
	out := make([]v1alpha1.ExportJob, 0)
	for _, e := range r.jobs {
		if string(e.job.Spec.Authority) == authority {
			out = append(out, *e.job.DeepCopy())
		}
	}
	r.mu.Unlock()
	export.SortNewestFirst(out)
	return out, nil
}

// Get returns the job named name.
func (r *Runner) Get(_ context.Context, name string) (*v1alpha1.ExportJob, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.jobs[name]
	if !ok {
		return nil, fmt.Errorf("export job %s not found", name)
	}
	return e.job.DeepCopy(), nil
}

// Cancel sets spec.cancel on the job named name.
func (r *Runner) Cancel(_ context.Context, name string) error {
	r.mu.Lock()
	e, ok := r.jobs[name]
	if ok {
		e.job.Spec.Cancel = true
		e.job.Generation++
		e.due = time.Time{}
	}
	r.mu.Unlock()
	if !ok {
		return fmt.Errorf("export job %s not found", name)
	}
	r.poke()
	return nil
}

// Delete finalizes the job named name (its stored file is deleted) and forgets it.
func (r *Runner) Delete(ctx context.Context, name string) error {
	r.mu.Lock()
	e, ok := r.jobs[name]
	r.mu.Unlock()
	if !ok {
		return nil
	}
	if err := r.machine.Finalize(ctx, e.job.DeepCopy()); err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.jobs, name)
	r.mu.Unlock()
	return nil
}

// Run syncs due jobs until ctx ends, then stops every running attempt.
func (r *Runner) Run(ctx context.Context) error {
	defer r.machine.Stop()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := r.syncDue(ctx)
		wait := time.Minute
		if !next.IsZero() {
			wait = max(next.Sub(r.clock.Now()), 10*time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
			r.mu.Lock()
			for _, e := range r.jobs {
				e.due = time.Time{}
			}
			r.mu.Unlock()
		case <-timer.C:
		}
	}
}

// syncDue syncs every job whose time has come and returns the earliest next due time.
func (r *Runner) syncDue(ctx context.Context) time.Time {
	now := r.clock.Now()
	r.mu.Lock()
	var due []*v1alpha1.ExportJob
	for _, e := range r.jobs {
		if !e.due.After(now) {
			due = append(due, e.job.DeepCopy())
		}
	}
	r.mu.Unlock()

	for _, job := range due {
		res, err := r.machine.Sync(ctx, job)
		retry := time.Time{}
		if err != nil {
			r.logger.Warn("export sync failed", "job", job.Name, "err", err)
			retry = now.Add(5 * time.Second)
		}
		for _, e := range res.Events {
			level := slog.LevelInfo
			if e.Warning {
				level = slog.LevelWarn
			}
			r.logger.Log(ctx, level, e.Message, "job", job.Name, "reason", e.Reason)
		}
		if res.Delete {
			if err := r.Delete(ctx, job.Name); err != nil {
				r.logger.Warn("delete finished export", "job", job.Name, "err", err)
			}
			continue
		}
		r.mu.Lock()
		if e, ok := r.jobs[job.Name]; ok && e.job.Generation == job.Generation {
			e.job.Status = job.Status
			switch {
			case !retry.IsZero():
				e.due = retry
			case res.RequeueAfter > 0:
				e.due = now.Add(res.RequeueAfter)
			default:
				e.due = now.Add(time.Hour)
			}
		}
		r.mu.Unlock()
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	for _, e := range r.jobs {
		if next.IsZero() || e.due.Before(next) {
			next = e.due
		}
	}
	return next
}

func (r *Runner) phases() map[v1alpha1.Phase]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[v1alpha1.Phase]int{}
	for _, e := range r.jobs {
		p := e.job.Status.Phase
		if p == "" {
			p = v1alpha1.PhasePending
		}
		out[p]++
	}
	return out
}
