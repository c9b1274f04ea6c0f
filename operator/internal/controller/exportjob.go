// Package controller drives export.Machine from ExportJob resources: it reads each job, lets the
// machine decide, writes the status back (at most once a second per job), records events, keeps a
// finalizer that deletes the stored file, and deletes jobs whose retention ended.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
)

// Finalizer holds a job until its stored file is deleted.
const Finalizer = "exports.tidemark.io/stored-object"

// StatusInterval is the least time between two status writes of one job.
const StatusInterval = time.Second

// Reconciler reconciles ExportJobs.
type Reconciler struct {
	client   client.Client
	reader   client.Reader // uncached: the machine must not act on a stale phase
	machine  *export.Machine
	recorder record.EventRecorder
	clock    clock.PassiveClock
	wake     chan event.TypedGenericEvent[*v1alpha1.ExportJob]

	mu        sync.Mutex
	lastWrite map[types.UID]time.Time
}

// New builds the reconciler and its machine and registers them with mgr: the controller, and a
// runnable that stops every running attempt when the manager stops or loses the lead.
func New(mgr manager.Manager, cfg export.Config, deps export.Deps, reg prometheus.Registerer) (*Reconciler, error) {
	r := &Reconciler{
		client:    mgr.GetClient(),
		reader:    mgr.GetAPIReader(),
		recorder:  mgr.GetEventRecorderFor("exportjob-operator"),
		clock:     deps.Clock,
		wake:      make(chan event.TypedGenericEvent[*v1alpha1.ExportJob], 1024),
		lastWrite: map[types.UID]time.Time{},
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	deps.Clock = r.clock
	deps.Wake = r.poke
	if reg != nil {
		m, err := export.NewMetrics(reg, r.phases(mgr.GetCache()))
		if err != nil {
			return nil, fmt.Errorf("register export metrics: %w", err)
		}
		deps.Metrics = m
	}
	r.machine = export.NewMachine(cfg, deps)

	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		r.machine.Stop()
		return nil
	})); err != nil {
		return nil, fmt.Errorf("add export stopper: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ExportJob{}).
		Named("exportjob").
		WatchesRawSource(source.Channel(r.wake, &handler.TypedEnqueueRequestForObject[*v1alpha1.ExportJob]{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
		Complete(r)
	if err != nil {
		return nil, fmt.Errorf("build exportjob controller: %w", err)
	}
	return r, nil
}

// poke asks for a reconcile of a job whose attempt finished. It never blocks: the channel is
// buffered and a full buffer means reconciles are pending anyway (each running job also requeues
// itself every progress interval).
func (r *Reconciler) poke(name types.NamespacedName) {
	job := &v1alpha1.ExportJob{}
	job.Namespace, job.Name = name.Namespace, name.Name
	select {
	case r.wake <- event.TypedGenericEvent[*v1alpha1.ExportJob]{Object: job}:
	default:
	}
}

// +kubebuilder:rbac:groups=exports.tidemark.io,resources=exportjobs,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=exports.tidemark.io,resources=exportjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=exports.tidemark.io,resources=exportjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var job v1alpha1.ExportJob
	if err := r.reader.Get(ctx, req.NamespacedName, &job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &job)
	}
	if ok, err := r.adopt(ctx, &job); err != nil || !ok {
		return ctrl.Result{}, err
	}
	if wait := r.untilWritable(job.UID); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}

	orig := job.DeepCopy()
	res, err := r.machine.Sync(ctx, &job)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("sync %s: %w", req.NamespacedName, err)
	}
	if !equality.Semantic.DeepEqual(orig.Status, job.Status) {
		if err := r.client.Status().Patch(ctx, &job, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, fmt.Errorf("write status of %s: %w", req.NamespacedName, err)
		}
		r.wrote(job.UID)
	}
	for _, e := range res.Events {
		typ := corev1.EventTypeNormal
		if e.Warning {
			typ = corev1.EventTypeWarning
		}
		r.recorder.Event(&job, typ, e.Reason, e.Message)
	}
	if res.Delete {
		err := r.client.Delete(ctx, &job, client.Preconditions{UID: &job.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("delete %s after its retention: %w", req.NamespacedName, err)
		}
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
}

// adopt adds the finalizer and the authority label. It reports false when it wrote the object:
// the write triggers the next reconcile.
func (r *Reconciler) adopt(ctx context.Context, job *v1alpha1.ExportJob) (bool, error) {
	label := string(job.Spec.Authority)
	if controllerutil.ContainsFinalizer(job, Finalizer) && job.Labels[v1alpha1.AuthorityLabel] == label {
		return true, nil
	}
	orig := job.DeepCopy()
	controllerutil.AddFinalizer(job, Finalizer)
	if job.Labels == nil {
		job.Labels = map[string]string{}
	}
	job.Labels[v1alpha1.AuthorityLabel] = label
	if err := r.client.Patch(ctx, job, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("add finalizer to %s: %w", job.Name, err)
	}
	return false, nil
}

func (r *Reconciler) finalize(ctx context.Context, job *v1alpha1.ExportJob) error {
	if !controllerutil.ContainsFinalizer(job, Finalizer) {
		return nil
	}
	if err := r.machine.Finalize(ctx, job); err != nil {
		return fmt.Errorf("finalize %s: %w", job.Name, err)
	}
	orig := job.DeepCopy()
	controllerutil.RemoveFinalizer(job, Finalizer)
	if err := r.client.Patch(ctx, job, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("remove finalizer of %s: %w", job.Name, err))
	}
	r.mu.Lock()
	delete(r.lastWrite, job.UID)
	r.mu.Unlock()
	return nil
}

// untilWritable is how long the job's status must wait before it may be written again.
func (r *Reconciler) untilWritable(uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.lastWrite[uid]
	if !ok {
		return 0
	}
	return StatusInterval - r.clock.Since(last)
}

func (r *Reconciler) wrote(uid types.UID) {
	r.mu.Lock()
	r.lastWrite[uid] = r.clock.Now()
	r.mu.Unlock()
}

// phases counts the cached jobs by phase for the jobs gauge.
func (r *Reconciler) phases(c client.Reader) func() map[v1alpha1.Phase]int {
	return func() map[v1alpha1.Phase]int {
		var list v1alpha1.ExportJobList
		out := map[v1alpha1.Phase]int{}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.List(ctx, &list); err != nil {
			return out
		}
		for _, j := range list.Items {
			p := j.Status.Phase
			if p == "" {
				p = v1alpha1.PhasePending
			}
			out[p]++
		}
		return out
	}
}
