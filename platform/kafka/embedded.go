package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EmbeddedOptions configure StartEmbedded.
type EmbeddedOptions struct {
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// Partitions of the seeded topics and of topics created on first use (0 = 1).
	Partitions int
	// Topics to create up front.
	Topics []string
	// TLS, when set, is the listener's TLS configuration: clients must speak TLS.
	TLS *tls.Config
	// NoAutoCreate makes the broker refuse to create a topic on first use, as a production cluster
	// with auto.create.topics.enable=false does.
	NoAutoCreate bool
	// Users, when any, turn SASL on: only they may connect.
	Users []EmbeddedUser
	// EnforceACLs: a user may do only what its ACLs grant (a superuser anything), as a cluster run
	// with an authorizer.
	EnforceACLs bool
	// SegmentBytes is the size of the partitions' log segments (default 100 MiB). Trimming frees
	// whole segments only: a broker that Trims wants small ones.
	SegmentBytes int
}

// Trim is what an embedded broker that lives long (the dev stack's) keeps of the topics consumer
// groups read: records every group of the topic has moved past go, as Postgres holds them once
// consumed, but KeepBehind of them stay, for a consumer that rewinds to the offsets its database
// stored (a dev Postgres crashed with commits acknowledged but lost). A partition some group of its
// topic has not committed on yet is left whole, and so are topics read without a group (the edge's
// partition readers), whose readers' positions the broker cannot know.
type Trim struct {
	// Consumers are the consumer group ids reading each topic, by topic name as produced.
	Consumers map[string][]string
	// KeepBehind counts records per partition.
	KeepBehind int64
	// Tails are topics no group commits on, read from their end (the WebSocket edge's): each
	// partition keeps only its newest TailKeep records, for a reader a little behind.
	Tails    []string
	TailKeep int64
	// Every is how often the broker trims (default a minute).
	Every time.Duration
}

// EmbeddedUser is a SASL user of the embedded broker. Mechanism is PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512 (SASLPlain...). A user with ACLs is held to them when the broker enforces ACLs;
// one without is a superuser.
type EmbeddedUser struct {
	Mechanism, Name, Password string
	ACLs                      []ACL
}

// Embedded is an in-process single-broker cluster speaking the real Kafka protocol, kept in
// memory. Topics named by a producer or consumer (e.g. "<topic>.dlq") are created on first use.
type Embedded struct {
	addrs []string

	mu      sync.Mutex
	cluster *kfake.Cluster // nil once closed

	stop     chan struct{}
	done     chan struct{} // the trimmer's, nil when none runs
	trimming sync.Once
	closing  sync.Once
}

// StartEmbedded starts the broker. ctx only bounds start-up, which does not block today.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Partitions <= 0 {
		opts.Partitions = 1
	}
	kopts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(opts.Partitions),
		// The default 6s minimum would reject short sessions that tests may use.
		kfake.GroupMinSessionTimeout(0),
	}
	if opts.Port != 0 {
		kopts = append(kopts, kfake.Ports(opts.Port))
	}
	if !opts.NoAutoCreate {
		kopts = append(kopts, kfake.AllowAutoTopicCreation())
	}
	if opts.TLS != nil {
		kopts = append(kopts, kfake.TLS(opts.TLS))
	}
	if len(opts.Users) > 0 {
		kopts = append(kopts, kfake.EnableSASL())
		for _, u := range opts.Users {
			if len(u.ACLs) == 0 {
				kopts = append(kopts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
				continue
			}
			acls, err := fakeACLs(u.ACLs)
			if err != nil {
				return nil, fmt.Errorf("kafka: embedded broker user %s: %w", u.Name, err)
			}
			kopts = append(kopts, kfake.User(u.Mechanism, u.Name, u.Password, acls...))
		}
	}
	if opts.EnforceACLs {
		kopts = append(kopts, kfake.EnableACLs())
	}
	if len(opts.Topics) > 0 {
		kopts = append(kopts, kfake.SeedTopics(int32(opts.Partitions), opts.Topics...))
	}
	if opts.SegmentBytes > 0 {
		kopts = append(kopts, kfake.BrokerConfigs(map[string]string{"log.segment.bytes": strconv.Itoa(opts.SegmentBytes)}))
	}
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: start embedded broker: %w", err)
	}
	return &Embedded{addrs: c.ListenAddrs(), cluster: c, stop: make(chan struct{})}, nil
}

// TrimEvery trims as t says (TrimOnce) every t.Every until Close; a second call does nothing.
func (e *Embedded) TrimEvery(t Trim) {
	e.trimming.Do(func() {
		e.done = make(chan struct{})
		go e.trimLoop(t)
	})
}

func (e *Embedded) trimLoop(t Trim) {
	defer close(e.done)
	every := t.Every
	if every <= 0 {
		every = time.Minute
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
			e.TrimOnce(t)
		}
	}
}

// Bytes is what the broker holds of topic's records.
func (e *Embedded) Bytes(topic string) int64 {
	e.mu.Lock()
	c := e.cluster
	e.mu.Unlock()
	var n int64
	if c != nil {
		for _, p := range c.PartitionInfos(topic) {
			n += p.NumBytes
		}
	}
	return n
}

// TrimOnce deletes the records t lets go of, and returns how many.
func (e *Embedded) TrimOnce(t Trim) int64 {
	e.mu.Lock()
	c := e.cluster
	e.mu.Unlock()
	if c == nil {
		return 0
	}
	var deleted int64
	trim := func(topic string, p *kfake.PartitionInfo, to int64) {
		if to > p.HighWatermark {
			to = p.HighWatermark
		}
		if to > p.LogStartOffset && c.DeleteRecords(topic, p.Partition, to) == nil {
			deleted += to - p.LogStartOffset
		}
	}
	// A group reads several topics: its commits are read once a pass, each read a round trip
	// through the broker's loop.
	infos := map[string]*kfake.GroupInfo{}
	for topic, groups := range t.Consumers {
		commits := make([]map[int32]kfake.GroupCommit, 0, len(groups))
		for _, g := range groups {
			info, read := infos[g]
			if !read {
				info = c.GroupInfo(g)
				infos[g] = info
			}
			if info == nil {
				commits = nil // a group that has not joined yet reads from the start
				break
			}
			commits = append(commits, info.Commits[topic])
		}
		if commits == nil {
			continue
		}
		for _, p := range c.PartitionInfos(topic) {
			to, all := int64(-1), true
			for _, cs := range commits {
				cm, ok := cs[p.Partition]
				if !ok {
					all = false
					break
				}
				if to < 0 || cm.Offset < to {
					to = cm.Offset
				}
			}
			if all {
				trim(topic, p, to-t.KeepBehind)
			}
		}
	}
	for _, topic := range t.Tails {
		for _, p := range c.PartitionInfos(topic) {
			trim(topic, p, p.HighWatermark-t.TailKeep)
		}
	}
	return deleted
}

// Brokers are the addresses to dial.
func (e *Embedded) Brokers() []string { return e.addrs }

// Close stops the broker and drops its data; later calls do nothing. The cluster is let go of
// because a stopped kfake cluster still holds every record produced to it, and whoever keeps the
// Embedded (a test's cleanup list, say) would keep them all live: a benchmark round's 400 MB.
func (e *Embedded) Close() {
	e.closing.Do(func() { close(e.stop) })
	e.trimming.Do(func() {}) // no trimmer starts after Close
	if e.done != nil {
		<-e.done
	}
	e.mu.Lock()
	c := e.cluster
	e.cluster = nil
	e.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// fakeACLs are acls as the fake broker takes them: allowed, literal names, from any host.
func fakeACLs(acls []ACL) ([]kfake.ACL, error) {
	var out []kfake.ACL
	for _, a := range acls {
		rt, err := kmsg.ParseACLResourceType(a.Resource)
		if err != nil {
			return nil, err
		}
		for _, op := range a.Operations {
			o, err := kmsg.ParseACLOperation(op)
			if err != nil {
				return nil, err
			}
			out = append(out, kfake.ACL{Resource: rt, Name: a.Name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: o, Allow: true})
		}
	}
	return out, nil
}
