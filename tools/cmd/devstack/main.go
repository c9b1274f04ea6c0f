// Command devstack runs the whole tidemark mesh on one machine (`make run`): embedded Kafka, a local
// PostgreSQL under ./.data, every service, the edge router on :8080 and the simulator.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/tools/devstack"
)

func main() {
	app.TuneGC() // as every deployable runs
	var o devstack.Options
	flag.StringVar(&o.Addr, "addr", ":8080", "edge router address")
	flag.StringVar(&o.DataDir, "data", ".data", "folder for the local PostgreSQL cluster (kept between runs)")
	flag.IntVar(&o.BackfillDays, "backfill-days", 3, "days of simulated history written before going live")
	flag.Float64Var(&o.LiveRate, "rate", 20, "simulated events per second once live")
	flag.Int64Var(&o.Seed, "seed", 1, "simulator seed")
	memory := flag.String("memory", cmp.Or(os.Getenv("TIDEMARK_DEV_MEMORY"), "2GiB"),
		"memory budget of the whole stack, the Go soft limit's base (TIDEMARK_DEV_MEMORY; GOMEMLIMIT overrides it)")
	flag.Parse()
	budget, err := devstack.ParseBytes(*memory)
	if err != nil {
		fmt.Fprintln(os.Stderr, "devstack: -memory:", err)
		os.Exit(2)
	}
	o.MemoryBudget = budget

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := devstack.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}
