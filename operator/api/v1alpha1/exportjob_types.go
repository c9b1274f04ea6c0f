package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidemark/tidemark/platform/exportstream"
)

// AuthorityLabel carries spec.authority so that one authority's jobs can be listed with a label
// selector (kubectl get ej -l tidemark.io/authority=...). The operator sets it when missing.
const AuthorityLabel = "tidemark.io/authority"

// FileType is the kind of records an export holds; the values are the spec's export fileType enum.
// +kubebuilder:validation:Enum=trades;market-trades;funding-rates;funding-payments;deposits;liquidations;settle-pnl-records;lp-records;if-stake-records;swap-records;rewards
type FileType string

// FileTypes are every FileType, in the spec's order.
var FileTypes = []FileType{
	"trades", "market-trades", "funding-rates", "funding-payments", "deposits", "liquidations",
	"settle-pnl-records", "lp-records", "if-stake-records", "swap-records", "rewards",
}

// PublicKey is a base58-encoded 32-byte public key.
// +kubebuilder:validation:Pattern=`^[1-9A-HJ-NP-Za-km-z]{32,44}$`
// +kubebuilder:validation:MaxLength=44
type PublicKey string

// MaxRangeSeconds bounds to - from: one export covers at most 366 days (the CEL rule on the spec
// spells the same number).
const MaxRangeSeconds = exportstream.MaxRangeSeconds

// ExportJobSpec is what to export. Everything but cancel is immutable once created.
//
// +kubebuilder:validation:XValidation:rule="self.from <= self.to",message="from must not be after to"
// +kubebuilder:validation:XValidation:rule="self.to - self.from <= 31622400",message="the range from..to may span at most 366 days"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.cancel) && oldSelf.cancel) || (has(self.cancel) && self.cancel)",message="cancel cannot be undone"
// +kubebuilder:validation:XValidation:rule="self.authority == oldSelf.authority && self.fileType == oldSelf.fileType && self.from == oldSelf.from && self.to == oldSelf.to && self.userPublicKeys == oldSelf.userPublicKeys && has(self.market) == has(oldSelf.market) && (!has(self.market) || self.market == oldSelf.market)",message="spec is immutable except cancel"
// +kubebuilder:validation:XValidation:rule="(has(self.backoffLimit) ? self.backoffLimit : -1) == (has(oldSelf.backoffLimit) ? oldSelf.backoffLimit : -1) && (has(self.activeDeadlineSeconds) ? self.activeDeadlineSeconds : -1) == (has(oldSelf.activeDeadlineSeconds) ? oldSelf.activeDeadlineSeconds : -1) && (has(self.ttlSecondsAfterFinished) ? self.ttlSecondsAfterFinished : -1) == (has(oldSelf.ttlSecondsAfterFinished) ? oldSelf.ttlSecondsAfterFinished : -1)",message="spec is immutable except cancel"
type ExportJobSpec struct {
	// Authority is the wallet (base58) whose accounts are exported; the job is listed under it.
	Authority PublicKey `json:"authority"`

	// FileType selects the records exported and so the service that serves them.
	FileType FileType `json:"fileType"`

	// From is the first second of the range, unix seconds, inclusive.
	// +kubebuilder:validation:Minimum=0
	From int64 `json:"from"`

	// To is the last second of the range, unix seconds, inclusive; at most 366 days after from.
	// +kubebuilder:validation:Minimum=0
	To int64 `json:"to"`

	// UserPublicKeys are the user accounts (base58) whose records are exported, at least one.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=set
	UserPublicKeys []PublicKey `json:"userPublicKeys"`

	// Market restricts the export to one market symbol (e.g. SOL-PERP); absent means all markets.
	// +optional
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`
	Market *string `json:"market,omitempty"`

	// Cancel stops the job: a pending or running job ends Cancelled and its partial object is
	// removed. It may only go from false to true; finished jobs ignore it.
	// +optional
	// +kubebuilder:default=false
	Cancel bool `json:"cancel,omitempty"`

	// BackoffLimit is how many failed attempts are retried before the job fails.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// ActiveDeadlineSeconds bounds the job's run time from its first start, retries included;
	// past it the job fails with reason DeadlineExceeded.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// TTLSecondsAfterFinished is how long a finished job (Expired, Failed or Cancelled) is kept
	// before the operator deletes it.
	// +optional
	// +kubebuilder:default=604800
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Phase is where a job is in its lifecycle:
// Pending -> Running -> Ready | Failed | Cancelled, and Ready -> Expired.
// +kubebuilder:validation:Enum=Pending;Running;Ready;Failed;Expired;Cancelled
type Phase string

const (
	PhasePending   Phase = "Pending"
	PhaseRunning   Phase = "Running"
	PhaseReady     Phase = "Ready"
	PhaseFailed    Phase = "Failed"
	PhaseExpired   Phase = "Expired"
	PhaseCancelled Phase = "Cancelled"
)

// Finished reports whether no more work happens for the phase but expiry and deletion.
func (p Phase) Finished() bool {
	return p == PhaseReady || p == PhaseFailed || p == PhaseExpired || p == PhaseCancelled
}

// ConditionSucceeded is True once the object is stored, False when the job failed, was cancelled
// or expired, and Unknown while it is pending or running. Its reason is CamelCase.
const ConditionSucceeded = "Succeeded"

// ExportJobStatus is what the operator observed and did.
type ExportJobStatus struct {
	// Phase is the job's lifecycle phase.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Conditions hold the Succeeded condition.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Progress is the number of rows written so far by the running attempt, e.g. "120000 rows".
	// +optional
	Progress string `json:"progress,omitempty"`

	// RecordCount is the number of records in the stored file.
	// +optional
	RecordCount int64 `json:"recordCount,omitempty"`

	// Bytes is the size of the stored file.
	// +optional
	Bytes int64 `json:"bytes,omitempty"`

	// Attempts is the number of attempts started, the current one included.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// StartedAt is when the first attempt started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// CompletedAt is when the job reached Ready, Failed or Cancelled.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// ReadyAt is when the file was stored.
	// +optional
	ReadyAt *metav1.Time `json:"readyAt,omitempty"`

	// ExpiresAt is readyAt + 8 h: download URLs end then and the file is deleted.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// NextAttemptAt is when a failed attempt is retried.
	// +optional
	NextAttemptAt *metav1.Time `json:"nextAttemptAt,omitempty"`

	// ObjectKey is the file's key in the export bucket; the API presigns download URLs from it.
	// +optional
	ObjectKey string `json:"objectKey,omitempty"`

	// FailureReason says why the last attempt failed, or why the job failed.
	// +optional
	FailureReason string `json:"failureReason,omitempty"`
}

// ExportJob is one CSV export of an authority's records into object storage.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ej,categories=tidemark
// +kubebuilder:printcolumn:name="Authority",type=string,JSONPath=`.spec.authority`
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.fileType`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Records",type=integer,JSONPath=`.status.recordCount`
// +kubebuilder:printcolumn:name="Started",type=date,JSONPath=`.status.startedAt`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress`,priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`,priority=1
type ExportJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExportJobSpec   `json:"spec"`
	Status ExportJobStatus `json:"status,omitempty"`
}

// ExportJobList is a list of ExportJobs.
//
// +kubebuilder:object:root=true
type ExportJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExportJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ExportJob{}, &ExportJobList{})
}
