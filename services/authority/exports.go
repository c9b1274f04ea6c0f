package authority

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/objstore"
)

// Export job statuses as the API reports them.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusReady   = "ready"
	StatusFailed  = "failed"
	StatusExpired = "expired"
)

// RetryWindow is how long a request repeated with the same body returns the job of the first.
const RetryWindow = time.Minute

// DefaultMaxUnfinished is how many unfinished (pending or running) jobs a wallet may have.
const DefaultMaxUnfinished = 5

// Exports creates and reads a wallet's export jobs.
type Exports struct {
	Jobs  export.Jobs    // where jobs are kept: the Kubernetes API, or the dev stack's runner
	Files objstore.Store // where their files are, for download URLs
	Store Store
	// MaxUnfinished bounds the wallet's pending and running jobs (DefaultMaxUnfinished when 0).
	MaxUnfinished int
	// Now is the clock of jobs: when a request arrives, when a file's download window ends. The jobs'
	// own times come from the API server (or the runner), so it is the real clock.
	Now func() time.Time
}

// Create makes the job of req for authority, or returns the job of the same request made less than
// RetryWindow ago. Every key of req must be an account of the wallet, and the wallet may have at
// most MaxUnfinished unfinished jobs.
func (e *Exports) Create(ctx context.Context, authority string, req ExportRequest) (*v1alpha1.ExportJob, error) {
	foreign, err := e.Store.Foreign(ctx, authority, req.UserPublicKeys)
	if err != nil {
		return nil, err
	}
	if len(foreign) > 0 {
		return nil, fault.Errorf(fault.Invalid, "userPublicKeys: %s %s of wallet %s", strings.Join(foreign, ", "),
			plural(len(foreign), "is not an account", "are not accounts"), authority)
	}
	spec := req.Spec(authority)
	var job *v1alpha1.ExportJob
	// The wallet's jobs are read, counted and added to under its lock: two replicas handed requests
	// of one wallet at once cannot both find room for one more job.
	err = e.Store.Exclusive(ctx, authority, func(ctx context.Context) error {
		jobs, err := e.Jobs.List(ctx, authority)
		if err != nil {
			return err
		}
		now := e.now()
		unfinished := 0
		for i := range jobs {
			j := &jobs[i]
			if sameRequest(j.Spec, spec) && now.Sub(j.CreationTimestamp.Time) < RetryWindow {
				job = j
				return nil
			}
			if !j.Status.Phase.Finished() {
				unfinished++
			}
		}
		if limit := e.maxUnfinished(); unfinished >= limit {
			return fault.Errorf(fault.Invalid, "wallet %s has %d unfinished exports, the most it may have: wait until one is ready or failed",
				authority, unfinished)
		}
		job, err = e.Jobs.Create(ctx, requestName(spec, now.Unix()/60), spec)
		if errors.Is(err, export.ErrInvalid) {
			return fault.Wrap(fault.Invalid, err, strings.TrimPrefix(err.Error(), export.ErrInvalid.Error()+": "))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (e *Exports) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e *Exports) maxUnfinished() int {
	if e.MaxUnfinished <= 0 {
		return DefaultMaxUnfinished
	}
	return e.MaxUnfinished
}

// List returns the wallet's jobs, newest first.
func (e *Exports) List(ctx context.Context, authority string) ([]v1alpha1.ExportJob, error) {
	return e.Jobs.List(ctx, authority)
}

// Record is an export job as the API lists it.
type Record struct {
	RequestID      string   `json:"requestId"`
	Status         string   `json:"status"`
	FileType       string   `json:"fileType"`
	From           int64    `json:"from"`
	To             int64    `json:"to"`
	UserPublicKeys []string `json:"userPublicKeys"`
	Market         *string  `json:"market"`
	CreatedAt      int64    `json:"createdAt"`
	CompletedAt    *int64   `json:"completedAt"`
	RecordCount    *int64   `json:"recordCount"`
	ErrorReason    *string  `json:"errorReason"`
	DownloadURL    *string  `json:"downloadUrl"`
}

// Status is how the API reads a job's phase: a Ready job whose file's window has ended (or has less
// than a second left) is expired even before the operator deletes the file, and a cancelled job failed.
func (e *Exports) Status(job *v1alpha1.ExportJob) string {
	st := job.Status
	switch st.Phase {
	case v1alpha1.PhaseRunning:
		return StatusRunning
	case v1alpha1.PhaseReady:
		// A URL lives whole seconds: a window with less than one left is over for the client.
		if st.ExpiresAt != nil && !e.now().Add(time.Second).Before(st.ExpiresAt.Time) {
			return StatusExpired
		}
		return StatusReady
	case v1alpha1.PhaseFailed, v1alpha1.PhaseCancelled:
		return StatusFailed
	case v1alpha1.PhaseExpired:
		return StatusExpired
	}
	return StatusPending // Pending, or not yet seen by the operator
}

// Record is job as the API lists it: a ready job carries a download URL that works until its file's
// window ends (8 hours after the file was stored), and no longer.
func (e *Exports) Record(ctx context.Context, job *v1alpha1.ExportJob) (Record, error) {
	st := job.Status
	r := Record{
		RequestID: job.Name, Status: e.Status(job), FileType: string(job.Spec.FileType), From: job.Spec.From, To: job.Spec.To,
		Market: job.Spec.Market, CreatedAt: job.CreationTimestamp.Unix(),
	}
	for _, k := range job.Spec.UserPublicKeys {
		r.UserPublicKeys = append(r.UserPublicKeys, string(k))
	}
	if st.CompletedAt != nil && st.Phase.Finished() {
		at := st.CompletedAt.Unix()
		r.CompletedAt = &at
	}
	switch r.Status {
	case StatusReady:
		u, err := export.DownloadURL(ctx, e.Files, job)
		if err != nil {
			return r, fmt.Errorf("download URL of %s: %w", job.Name, err)
		}
		r.DownloadURL = &u
		fallthrough
	case StatusExpired:
		if st.Phase == v1alpha1.PhaseReady || st.Phase == v1alpha1.PhaseExpired {
			n := st.RecordCount
			r.RecordCount = &n
		}
	case StatusFailed:
		reason := failure(job)
		r.ErrorReason = &reason
	}
	return r, nil
}

// failure is why a job failed, as its status tells it.
func failure(job *v1alpha1.ExportJob) string {
	st := job.Status
	if st.Phase == v1alpha1.PhaseCancelled {
		return "the export was cancelled"
	}
	if st.FailureReason != "" {
		return st.FailureReason
	}
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionSucceeded && c.Message != "" {
			return c.Message
		}
	}
	return "the export failed"
}
