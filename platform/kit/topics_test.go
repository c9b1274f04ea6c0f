package kit_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/mesh"
)

// TestTopicsCommand: on a cluster that creates no topic on first use, the topics command creates
// every topic of the mesh and each protocol topic's DLQ under the release's prefix, with the
// partitions asked; run again it creates nothing; with -strict, a topic that differs fails it.
func TestTopicsCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := kafka.StartEmbedded(ctx, kafka.EmbeddedOptions{NoAutoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	env := map[string]string{"TIDEMARK_KAFKA_BROKERS": strings.Join(e.Brokers(), ","), "TIDEMARK_KAFKA_TOPIC_PREFIX": "staging."}
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := kit.Topics(ctx, kittest.Env(env), args, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	code, out := run("-partitions", "4", "-replication", "1")
	specs := mesh.TopicSpecs(mesh.TopicPlan{Partitions: 4, ReplicationFactor: 1})
	if code != 0 || strings.Count(out, "created ") != len(specs) {
		t.Fatalf("first run: exit %d, %d created of %d:\n%s", code, strings.Count(out, "created "), len(specs), out)
	}
	for _, want := range []string{"created   staging." + events.TopicFills + "\n", "created   staging." + events.DLQTopic(events.TopicFills) + "\n",
		"created   staging." + events.TopicEdgeCandles + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("first run does not say %q", want)
		}
	}
	kc := kafka.Config{Brokers: e.Brokers(), Naming: kafka.Naming{TopicPrefix: "staging."}}
	ends, err := kc.EndOffsets(ctx, events.TopicFills)
	if err != nil || len(ends[events.TopicFills]) != 4 {
		t.Fatalf("staging.protocol.fills: %v %v", ends, err)
	}

	code, out = run("-partitions", "4", "-replication", "1", "-strict")
	if code != 0 || strings.Count(out, "ok ") != len(specs) || strings.Contains(out, "created") {
		t.Fatalf("second run: exit %d\n%s", code, out)
	}
	code, out = run("-partitions", "8", "-replication", "1", "-strict")
	if code != 3 || !strings.Contains(out, "partitions 4, declared 8") {
		t.Fatalf("a plan of 8 partitions over topics of 4, strict: exit %d\n%s", code, out)
	}
	if code, out = run("-partitions", "0"); code != 2 {
		t.Errorf("-partitions 0: exit %d\n%s", code, out)
	}
	delete(env, "TIDEMARK_KAFKA_BROKERS")
	if code, out = run(); code != 1 || !strings.Contains(out, "TIDEMARK_KAFKA_BROKERS is required") {
		t.Errorf("without brokers: exit %d\n%s", code, out)
	}
}
