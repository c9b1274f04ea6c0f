package kit

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/mesh"
)

// TopicsCommand is the subcommand of every service binary that declares the mesh's topics to the
// cluster the environment names (TIDEMARK_KAFKA_*: brokers, TLS, SASL, prefixes): it creates the
// missing ones and reports the ones that differ from their declaration, so that a cluster with
// auto-creation off (as production clusters run) has every topic before the deployables start. The
// chart's topics hook runs it; a platform team may run it from any image:
//
//	market topics -partitions 12 -replication 3 [-dry-run] [-strict]
const TopicsCommand = "topics"

// Topics runs the topics command with args, reading its connection from env, and returns the
// process's exit code: 0 done, 1 an error, 2 bad arguments, 3 with -strict when a topic differs.
func Topics(ctx context.Context, env *app.Env, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(TopicsCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	plan := mesh.TopicPlan{}
	fs.IntVar(&plan.Partitions, "partitions", 12, "partitions of each topic created")
	fs.IntVar(&plan.ReplicationFactor, "replication", 3, "replication factor of each topic created")
	dryRun := fs.Bool("dry-run", false, "report what would be created, create nothing")
	strict := fs.Bool("strict", false, "exit 3 when an existing topic differs from its declaration")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if plan.Partitions < 1 || plan.ReplicationFactor < 1 {
		fmt.Fprintln(stderr, "topics: -partitions and -replication must be at least 1")
		return 2
	}
	var sec kafka.Security
	var naming kafka.Naming
	brokers := env.Strings("KAFKA_BROKERS", nil)
	sec.RegisterEnv(env)
	naming.RegisterEnv(env)
	err := errors.Join(env.Err(), sec.Validate(), naming.Validate())
	if err == nil && len(brokers) == 0 {
		err = errors.New(app.EnvPrefix + "KAFKA_BROKERS is required")
	}
	if err != nil {
		fmt.Fprintf(stderr, "topics: configuration: %v\n", err)
		return 1
	}
	kc, err := kafka.Config{Brokers: brokers, ClientID: "tidemark-topics", Naming: naming}.Connect(ctx, sec)
	if err != nil {
		fmt.Fprintf(stderr, "topics: %v\n", err)
		return 1
	}
	report, err := kc.EnsureTopicSpecs(ctx, mesh.TopicSpecs(plan), *dryRun)
	fmt.Fprint(stdout, report)
	if err != nil {
		fmt.Fprintf(stderr, "topics: %v\n", err)
		return 1
	}
	if *strict && len(report.Differing) > 0 {
		return 3
	}
	return 0
}
