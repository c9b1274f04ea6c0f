package kafka

import (
	"fmt"
	"regexp"
	"strings"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/tidemark/tidemark/platform/app"
)

// Naming maps the mesh's topic and consumer group names (protocol.fills, edge.candles, a service's
// group) to a deployment's, so that several releases share one Kafka cluster without reading each
// other's topics or splitting each other's partitions: staging's protocol.fills is
// staging.protocol.fills. The code names topics by the mesh's names only; Config applies the
// prefixes where names go to the brokers, and Logical takes them off what comes back.
type Naming struct {
	// TopicPrefix is put before every topic name (TIDEMARK_KAFKA_TOPIC_PREFIX), DLQs included.
	TopicPrefix string
	// GroupPrefix is put before every consumer group id (TIDEMARK_KAFKA_GROUP_PREFIX).
	GroupPrefix string
}

// RegisterEnv reads TIDEMARK_KAFKA_TOPIC_PREFIX and TIDEMARK_KAFKA_GROUP_PREFIX.
func (n *Naming) RegisterEnv(e *app.Env) {
	n.TopicPrefix = e.String("KAFKA_TOPIC_PREFIX", "")
	n.GroupPrefix = e.String("KAFKA_GROUP_PREFIX", "")
}

// legalName is what Kafka accepts in topic names (and what group ids are kept to here).
var legalName = regexp.MustCompile(`^[a-zA-Z0-9._-]*$`)

// Validate refuses prefixes Kafka would refuse in a topic name, naming the variable.
func (n Naming) Validate() error {
	for _, p := range []struct{ name, v string }{{"KAFKA_TOPIC_PREFIX", n.TopicPrefix}, {"KAFKA_GROUP_PREFIX", n.GroupPrefix}} {
		if !legalName.MatchString(p.v) || len(p.v) > 100 {
			return fmt.Errorf("%s%s %q: use at most 100 of a-z, A-Z, 0-9, '.', '_' and '-'", app.EnvPrefix, p.name, p.v)
		}
	}
	return nil
}

// Topic is the deployment's name of the mesh's topic name.
func (n Naming) Topic(name string) string { return n.TopicPrefix + name }

// Topics are the deployment's names of names.
func (n Naming) Topics(names []string) []string {
	out := make([]string, len(names))
	for i, t := range names {
		out[i] = n.Topic(t)
	}
	return out
}

// Logical is the mesh's name of a topic the brokers name; a topic without the prefix is returned as
// it is.
func (n Naming) Logical(topic string) string { return strings.TrimPrefix(topic, n.TopicPrefix) }

// Group is the deployment's id of the mesh's consumer group name.
func (n Naming) Group(name string) string { return n.GroupPrefix + name }

// Outgoing renames msgs, named by the mesh, for the brokers, in place.
func (n Naming) Outgoing(msgs []kafkago.Message) {
	if n.TopicPrefix == "" {
		return
	}
	for i := range msgs {
		if msgs[i].Topic != "" {
			msgs[i].Topic = n.Topic(msgs[i].Topic)
		}
	}
}

// ACL is a permission a Kafka user needs: operations on a resource (a topic, a consumer group, the
// cluster), named by the mesh (a release's prefixes go before them: Naming.Grant).
type ACL struct {
	Resource   string   // "topic", "group" or "cluster"
	Name       string   // the mesh's name
	Operations []string // Kafka's operation names: Read, Write, Describe, Create, DescribeConfigs
}

// Grant is acl with the release's name of its resource.
func (n Naming) Grant(acl ACL) ACL {
	switch acl.Resource {
	case "topic":
		acl.Name = n.Topic(acl.Name)
	case "group":
		acl.Name = n.Group(acl.Name)
	}
	return acl
}
