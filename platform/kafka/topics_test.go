package kafka_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
)

// TestEnsureTopicSpecs: against a broker that creates no topic on first use, the declared topics are
// created under the release's prefix with their partitions and retention, a second run creates
// nothing, and a topic that exists otherwise than declared is reported, not changed.
func TestEnsureTopicSpecs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := startBroker(t, kafka.EmbeddedOptions{NoAutoCreate: true, Partitions: 1, Topics: []string{"staging.edge.candles"}})
	kc := kafka.Config{Brokers: e.Brokers(), Naming: kafka.Naming{TopicPrefix: "staging."}}

	// Auto-creation is off: a write to a topic nobody created fails.
	w := kc.NewWriter("")
	w.MaxAttempts = 1
	err := (kafka.Producer{W: w, Naming: kc.Naming}).Write(ctx, events.Message{Topic: "protocol.fills", Value: []byte("{}")})
	w.Close()
	if err == nil {
		t.Fatal("the broker created protocol.fills on first use")
	}

	specs := []kafka.TopicSpec{
		{Name: "protocol.fills", Partitions: 6, ReplicationFactor: 1, Retention: 7 * 24 * time.Hour},
		{Name: "protocol.fills.dlq", Partitions: 1, ReplicationFactor: 1, Retention: 30 * 24 * time.Hour},
		{Name: "edge.candles", Partitions: 3, ReplicationFactor: 1, Retention: 24 * time.Hour},
	}
	report, err := kc.EnsureTopicSpecs(ctx, specs, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(report.Created, []string{"staging.protocol.fills", "staging.protocol.fills.dlq"}) || len(report.Matching) != 0 {
		t.Errorf("first run: %+v", report)
	}
	if len(report.Differing) != 1 || report.Differing[0].Name != "staging.edge.candles" ||
		!strings.Contains(strings.Join(report.Differing[0].What, ";"), "partitions 1, declared 3") {
		t.Errorf("the existing edge.candles of 1 partition: %+v", report.Differing)
	}
	ends, err := kc.EndOffsets(ctx, "protocol.fills")
	if err != nil || len(ends["protocol.fills"]) != 6 {
		t.Fatalf("protocol.fills after creation: %v %v", ends, err)
	}

	again, err := kc.EnsureTopicSpecs(ctx, specs, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 || !slices.Equal(again.Matching, []string{"staging.protocol.fills", "staging.protocol.fills.dlq"}) || len(again.Differing) != 1 {
		t.Errorf("second run: %+v", again)
	}
	t.Logf("second run:\n%s", again)

	// A retention changed by hand is reported as it stands.
	specs[0].Retention = 3 * 24 * time.Hour
	third, err := kc.EnsureTopicSpecs(ctx, specs[:1], true)
	if err != nil {
		t.Fatal(err)
	}
	if len(third.Differing) != 1 || !strings.Contains(third.Differing[0].What[0], "retention.ms 604800000, declared 259200000") {
		t.Errorf("a retention that differs: %+v", third)
	}
}
