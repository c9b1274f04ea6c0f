package ingest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
)

// TestReleasesShareABroker: two releases on one Kafka cluster, staging and production, each with
// its topic and group prefixes, run the same consumer (same group name, same topics by the mesh's
// names). Each stores all of its own messages and none of the other's, each group owns every
// partition of its own topic, and each sends its malformed messages to its own dead-letter topic.
func TestReleasesShareABroker(t *testing.T) {
	releases := []kafka.Naming{{TopicPrefix: "staging.", GroupPrefix: "staging-"}, {TopicPrefix: "prod.", GroupPrefix: "prod-"}}
	var topics []string
	for _, n := range releases {
		topics = append(topics, n.Topic(itemsTopic))
	}
	e, err := kafka.StartEmbedded(context.Background(), kafka.EmbeddedOptions{Partitions: 2, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)

	type release struct {
		kc   kafka.Config
		pool *pgxpool.Pool
		want []item
		bad  string
	}
	var rs []release
	for i, n := range releases {
		kc := kafka.Config{Brokers: e.Brokers(), ClientID: t.Name(), Naming: n}
		pool := newItemsPool(t)
		start(t, newConsumer(t, pool, kc, prometheus.NewRegistry(), (&itemSink{}).sink()))
		want := genItems(i*1000, 20+10*i)
		produceItems(t, kc, want)
		bad := `{"release":` + string(rune('0'+i)) + `}`
		produceToPartition0(t, kc, []byte(bad))
		waitRows(t, pool, len(want), 30*time.Second)
		rs = append(rs, release{kc: kc, pool: pool, want: want, bad: bad})
	}
	for i, r := range rs {
		// Its rows are its own items (waitRows counted them, each once; here, which they are).
		rows, err := r.pool.Query(context.Background(), `SELECT item_id FROM test.items ORDER BY item_id::int`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, it := range r.want {
			want = append(want, it.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("release %d stored items %v, want its own %v", i, got, want)
		}
		dlq := readDLQ(t, r.kc, 1)
		if string(dlq[0].Value) != r.bad {
			t.Errorf("release %d: its DLQ holds %s, want its own %s", i, dlq[0].Value, r.bad)
		}
		if want := r.kc.Topic(ingest.DLQTopic(itemsTopic)); dlq[0].Topic != want {
			t.Errorf("release %d: dead letters went to %s, want %s", i, dlq[0].Topic, want)
		}
	}
}
