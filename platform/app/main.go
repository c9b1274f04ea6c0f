package app

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/platform/version"
)

// Main runs a deployable's process: `<name> version` prints its build, otherwise run gets the
// TIDEMARK_* environment and a context that ends on SIGINT or SIGTERM, with the Go soft limit set
// from the container's memory limit. An error run returns is printed and the process exits 1.
func Main(name string, run func(ctx context.Context, env *Env) error) {
	if version.Handle(name, os.Args[1:], os.Stdout) {
		return
	}
	TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, NewEnv(EnvPrefix)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		stop()
		os.Exit(1)
	}
}
