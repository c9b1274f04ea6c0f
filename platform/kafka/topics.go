package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// TopicSpec is a topic as the mesh declares it: its name (the mesh's), partitions, replication
// factor and retention.
type TopicSpec struct {
	Name       string
	Partitions int
	// ReplicationFactor 0 is min(3, the cluster's brokers) for a topic created, and no check of an
	// existing one.
	ReplicationFactor int
	// Retention is the topic's retention.ms; 0 leaves the broker's default, Forever keeps every
	// message.
	Retention time.Duration
}

// TopicDiff is an existing topic that differs from its declaration.
type TopicDiff struct {
	Name string // the brokers' name
	// What lists each difference: "partitions 3, declared 12".
	What []string
}

// TopicReport is what EnsureTopicSpecs found and did, by the brokers' names.
type TopicReport struct {
	Created, Matching []string
	Differing         []TopicDiff
}

// String is the report as a command prints it, one line a topic.
func (r TopicReport) String() string {
	var b strings.Builder
	for _, t := range r.Created {
		fmt.Fprintf(&b, "created   %s\n", t)
	}
	for _, t := range r.Matching {
		fmt.Fprintf(&b, "ok        %s\n", t)
	}
	for _, d := range r.Differing {
		fmt.Fprintf(&b, "differs   %s: %s\n", d.Name, strings.Join(d.What, "; "))
	}
	return b.String()
}

// retentionConfig is the topic setting Retention declares.
const retentionConfig = "retention.ms"

// Forever is the Retention of a topic that keeps every message (retention.ms -1).
const Forever time.Duration = -1

// retentionMs is d as retention.ms.
func retentionMs(d time.Duration) string {
	if d < 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// EnsureTopicSpecs creates the declared topics the cluster lacks (under the release's prefix) and
// compares the ones it has with their declarations: partitions, replication factor and retention.
// It changes no existing topic: a difference is reported for the platform team to settle (Kafka
// cannot take partitions away, and adding some moves keys to other partitions). Running it again
// creates nothing. dryRun reports what it would create without creating it.
func (c Config) EnsureTopicSpecs(ctx context.Context, specs []TopicSpec, dryRun bool) (TopicReport, error) {
	var report TopicReport
	client := &kafkago.Client{Addr: kafkago.TCP(c.Brokers...), Timeout: 30 * time.Second, Transport: c.transport()}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = c.Topic(s.Name)
	}
	meta, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
	if err != nil {
		return report, fmt.Errorf("kafka: metadata of the declared topics: %w", err)
	}
	existing := map[string]kafkago.Topic{}
	for _, t := range meta.Topics {
		switch {
		case t.Error == nil:
			existing[t.Name] = t
		case !errors.Is(t.Error, kafkago.UnknownTopicOrPartition):
			return report, fmt.Errorf("kafka: topic %s: %w", t.Name, t.Error)
		}
	}
	retention, err := c.retentions(ctx, client, existing)
	if err != nil {
		return report, err
	}
	var create []kafkago.TopicConfig
	for i, s := range specs {
		name := names[i]
		t, ok := existing[name]
		if !ok {
			tc := kafkago.TopicConfig{Topic: name, NumPartitions: s.Partitions, ReplicationFactor: s.ReplicationFactor}
			if tc.ReplicationFactor == 0 {
				tc.ReplicationFactor = min(3, len(meta.Brokers))
			}
			if s.Retention != 0 {
				tc.ConfigEntries = []kafkago.ConfigEntry{{ConfigName: retentionConfig, ConfigValue: retentionMs(s.Retention)}}
			}
			create = append(create, tc)
			report.Created = append(report.Created, name)
			continue
		}
		if what := differences(s, t, retention[name]); len(what) > 0 {
			report.Differing = append(report.Differing, TopicDiff{Name: name, What: what})
		} else {
			report.Matching = append(report.Matching, name)
		}
	}
	if len(create) == 0 || dryRun {
		return report, nil
	}
	resp, err := client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: create})
	if err != nil {
		return report, fmt.Errorf("kafka: create %d topics: %w", len(create), err)
	}
	for name, err := range resp.Errors {
		// Another run (a second replica of the hook, say) created it meanwhile: it exists.
		if err != nil && !errors.Is(err, kafkago.TopicAlreadyExists) {
			return report, fmt.Errorf("kafka: create topic %s: %w", name, err)
		}
	}
	return report, nil
}

// retentions reads retention.ms of the existing topics.
func (c Config) retentions(ctx context.Context, client *kafkago.Client, existing map[string]kafkago.Topic) (map[string]string, error) {
	out := map[string]string{}
	if len(existing) == 0 {
		return out, nil
	}
	req := &kafkago.DescribeConfigsRequest{}
	for name := range existing {
		req.Resources = append(req.Resources, kafkago.DescribeConfigRequestResource{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: name, ConfigNames: []string{retentionConfig}})
	}
	resp, err := client.DescribeConfigs(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("kafka: describe the declared topics: %w", err)
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return nil, fmt.Errorf("kafka: describe topic %s: %w", r.ResourceName, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == retentionConfig {
				out[r.ResourceName] = e.ConfigValue
			}
		}
	}
	return out, nil
}

// differences says how t differs from s.
func differences(s TopicSpec, t kafkago.Topic, retention string) []string {
	var what []string
	if len(t.Partitions) != s.Partitions {
		what = append(what, fmt.Sprintf("partitions %d, declared %d", len(t.Partitions), s.Partitions))
	}
	if s.ReplicationFactor > 0 && len(t.Partitions) > 0 && len(t.Partitions[0].Replicas) != s.ReplicationFactor {
		what = append(what, fmt.Sprintf("replication factor %d, declared %d", len(t.Partitions[0].Replicas), s.ReplicationFactor))
	}
	if want := retentionMs(s.Retention); s.Retention != 0 && retention != want {
		what = append(what, fmt.Sprintf("%s %s, declared %s", retentionConfig, retention, want))
	}
	return what
}
