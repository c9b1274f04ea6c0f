package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/tools/sim"
)

func startBroker(tb testing.TB) []string {
	tb.Helper()
	e, err := kafka.StartEmbedded(context.Background(), kafka.EmbeddedOptions{Partitions: 2})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e.Brokers()
}

func emptyEnv(vars map[string]string) *app.Env {
	return &app.Env{Prefix: "TIDEMARK_", Lookup: func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// topicSizes counts the messages of each topic over all its partitions.
func topicSizes(tb testing.TB, brokers []string, partitions int, topics []string) map[string]int64 {
	tb.Helper()
	sizes, err := listSizes(brokers, partitions, topics)
	if err != nil {
		tb.Fatal(err)
	}
	return sizes
}

func listSizes(brokers []string, partitions int, topics []string) (map[string]int64, error) {
	client := &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, t := range topics {
		for p := range partitions {
			req.Topics[t] = append(req.Topics[t], kafkago.LastOffsetOf(p))
		}
	}
	resp, err := client.ListOffsets(context.Background(), req)
	if err != nil {
		return nil, fmt.Errorf("list offsets: %w", err)
	}
	sizes := map[string]int64{}
	for topic, parts := range resp.Topics {
		for _, p := range parts {
			if p.Error != nil {
				return nil, fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			sizes[topic] += p.LastOffset
		}
	}
	return sizes, nil
}

func TestBackfillWritesEveryMessageToKafka(t *testing.T) {
	brokers := startBroker(t)
	until := time.Date(2025, 4, 2, 6, 0, 0, 0, time.UTC)
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"backfill", "--days", "1", "--until", until.Format(time.RFC3339),
		"--authorities", "5", "--fills-per-minute", "2", "--seed", "3", "--partitions", "2"},
		emptyEnv(map[string]string{"TIDEMARK_KAFKA_BROKERS": strings.Join(brokers, ",")}), &stderr, quiet())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "100.0%") {
		t.Errorf("no completed progress bar in %q", stderr.String())
	}

	want := map[string]int64{}
	s := sim.New(sim.Config{Seed: 3, Authorities: 5, FillsPerMinute: 2})
	if err := s.Generate(until.Add(-24*time.Hour), until, func(m events.Message) error {
		want[m.Topic]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := topicSizes(t, brokers, 2, events.ProtocolTopics())
	for _, topic := range events.ProtocolTopics() {
		if got[topic] != want[topic] {
			t.Errorf("%s holds %d messages, want %d", topic, got[topic], want[topic])
		}
	}

	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: events.TopicFills, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatalf("read a fill: %v", err)
	}
	rec, err := events.Decode(m.Topic, m.Value)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if et, _ := kafka.Header(m, events.HeaderEventType); et != "fill" || rec.EventType() != "fill" {
		t.Errorf("event-type header %q for a %s", et, rec.EventType())
	}
	if f := rec.(*events.Fill); string(m.Key) != strconv.Itoa(f.MarketIndex) {
		t.Errorf("key %q for market %d", m.Key, f.MarketIndex)
	}
}

func TestLiveStreamsUntilCancelled(t *testing.T) {
	brokers := startBroker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"live", "--rate", "100", "--authorities", "5", "--brokers", brokers[0], "--partitions", "2"},
			emptyEnv(nil), io.Discard, quiet())
	}()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		// Errors mean the topics are not created yet.
		if sizes, err := listSizes(brokers, 2, []string{events.TopicNewUsers}); err == nil && sizes[events.TopicNewUsers] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("live wrote nothing")
		}
		select {
		case err := <-done:
			t.Fatalf("live stopped early: %v", err)
		case <-tick.C:
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("live returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("live did not stop after cancel")
	}
}

func TestRunRejectsBadInvocations(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no subcommand", nil, nil, "subcommand"},
		{"unknown subcommand", []string{"replay"}, nil, "subcommand"},
		{"unknown flag", []string{"live", "--nope"}, nil, "nope"},
		{"bad until", []string{"backfill", "--until", "yesterday"}, nil, "--until"},
		{"bad env", []string{"live"}, map[string]string{"TIDEMARK_SIM_SEED": "abc"}, "TIDEMARK_SIM_SEED"},
		{"no brokers", []string{"live", "--brokers", " , "}, nil, "brokers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, emptyEnv(tt.env), io.Discard, quiet())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}
