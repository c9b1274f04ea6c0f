package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"sync"

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
	c, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: start embedded broker: %w", err)
	}
	return &Embedded{addrs: c.ListenAddrs(), cluster: c}, nil
}

// Brokers are the addresses to dial.
func (e *Embedded) Brokers() []string { return e.addrs }

// Close stops the broker and drops its data; later calls do nothing. The cluster is let go of
// because a stopped kfake cluster still holds every record produced to it, and whoever keeps the
// Embedded (a test's cleanup list, say) would keep them all live: a benchmark round's 400 MB.
func (e *Embedded) Close() {
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
