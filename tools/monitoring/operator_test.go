package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/tidemark/tidemark/tools/monitoring"
)

// operatorCatalogue adds to c what the operator exposes that the dev stack, which runs exports
// without Kubernetes, does not: controller-runtime's leader gauge. client-go's leader election runs
// here as the operator's manager runs it (named by its election id), on a lock kept in memory rather
// than a Lease, and controller-runtime's registry, which the operator serves, is read as scraped.
func operatorCatalogue(t testing.TB, c catalogue) {
	t.Helper()
	klog.SetLogger(logr.Discard()) // the election's progress is no news here
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	led := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          &memoryLock{id: "operator-0"},
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Name: monitoring.OperatorLease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(led) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go le.Run(ctx)
	select {
	case <-led:
	case <-time.After(30 * time.Second):
		t.Fatal("the leader election elected nobody")
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.scrape(&buf); err != nil {
		t.Fatal(err)
	}
}

// memoryLock is a resourcelock.Interface kept in memory: one candidate, no API server.
type memoryLock struct {
	id     string
	mu     sync.Mutex
	record *resourcelock.LeaderElectionRecord
}

func (l *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, monitoring.OperatorLease)
	}
	r := *l.record
	b, err := json.Marshal(r)
	return &r, b, err
}

func (l *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record = &r
	return nil
}

func (l *memoryLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	return l.Create(ctx, r)
}

func (l *memoryLock) RecordEvent(string) {}
func (l *memoryLock) Identity() string   { return l.id }
func (l *memoryLock) Describe() string   { return "memory/" + monitoring.OperatorLease }
