// Command operator runs ExportJobs in a cluster: it streams each job's CSV from the service that owns
// its records into the export bucket and keeps the job's status, under leader election.
//
// Configuration (environment, read by package settings):
//
//	TIDEMARK_EXPORT_SOURCES    fileType=url pairs, e.g. market-trades=http://market:9090,funding-rates=http://market:9090
//	TIDEMARK_S3_*              the export bucket and its credentials (mounted from a Secret), see objstore.S3Config.RegisterEnv
//	TIDEMARK_NAMESPACE         the namespace whose jobs are run (default: the pod's namespace, POD_NAMESPACE)
//	TIDEMARK_EXPORT_MAX_CONCURRENT  exports running at once (default 4)
//	TIDEMARK_INTERNAL_ADDR     /metrics, /healthz, /readyz (default :9090)
//	TIDEMARK_LEADER_ELECT      default true
//	TIDEMARK_LOG_LEVEL         debug, info, warn or error
//
// Run as `operator drain [-wait 1m]`, it deletes every ExportJob of its namespace and their files and
// exits once none is left (the chart's pre-delete hook, when the CRD goes with the release).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/internal/controller"
	"github.com/tidemark/tidemark/operator/settings"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/telemetry"
)

func main() {
	app.Main("operator", func(ctx context.Context, env *app.Env) error {
		logger := telemetry.NewLogger(os.Stderr, settings.LogLevel(env)).With("service", "operator")
		ctrl.SetLogger(logr.FromSlogHandler(logger.Handler()))
		if len(os.Args) > 1 && os.Args[1] == "drain" {
			if err := drain(ctx, env, ctrl.GetConfigOrDie(), os.Args[2:]); err != nil {
				return fmt.Errorf("drain: %w", err)
			}
			return nil
		}
		// controller-runtime's registry holds the client's default Go collector: the mesh's has the
		// live heap too, which sizes the operator's memory as it does every deployable's.
		metrics.Registry.Unregister(collectors.NewGoCollector())
		if err := metrics.Registry.Register(telemetry.GoCollector()); err != nil {
			return fmt.Errorf("register the Go collector: %w", err)
		}
		return run(ctx, env, ctrl.GetConfigOrDie(), metrics.Registry, logger)
	})
}

// run is the operator on the cluster kube: configuration from env, export metrics on reg (served
// with the manager's on the internal port).
func run(ctx context.Context, env *app.Env, kube *rest.Config, reg prometheus.Registerer, logger *slog.Logger) error {
	set, err := settings.Load(env)
	if err != nil {
		return err
	}
	internalAddr, namespace, leaderElect := set.InternalAddr, set.Namespace, set.LeaderElect

	store, err := objstore.NewS3(ctx, set.S3)
	if err != nil {
		return err
	}

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return fmt.Errorf("build scheme: %w", err)
	}
	opts := ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress: internalAddr,
			ExtraHandlers: map[string]http.Handler{
				"/healthz": http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}),
			},
		},
		HealthProbeBindAddress:        "0",
		LeaderElection:                leaderElect,
		LeaderElectionID:              "exportjobs.exports.tidemark.io",
		LeaderElectionNamespace:       namespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr(30 * time.Second),
	}
	if namespace != "" {
		opts.Cache = cache.Options{DefaultNamespaces: map[string]cache.Config{namespace: {}}}
	}
	mgr, err := ctrl.NewManager(kube, opts)
	if err != nil {
		return fmt.Errorf("build manager: %w", err)
	}
	if _, err := controller.New(mgr, export.Config{MaxConcurrent: set.MaxConcurrent}, export.Deps{
		Store: store, Source: export.HTTPSource{Endpoints: set.Sources, Client: &http.Client{}}, Logger: logger,
	}, reg); err != nil {
		return err
	}
	// Ready once the informer cache has synced: before that, reconciles would miss jobs.
	ready := &healthz.Handler{Checks: map[string]healthz.Checker{"cache": func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer cache not synced")
		}
		return nil
	}}}
	if err := mgr.AddMetricsServerExtraHandler("/readyz", http.StripPrefix("/readyz", ready)); err != nil {
		return fmt.Errorf("add readyz: %w", err)
	}
	logger.Info("operator starting", "internal", internalAddr, "namespace", namespace, "leaderElection", leaderElect)
	return mgr.Start(ctx)
}

// drain deletes every export job of the operator's namespace with its files (controller.Drain),
// waiting -wait for a running operator to finalize them before doing it itself.
func drain(ctx context.Context, env *app.Env, kube *rest.Config, args []string) error {
	fs := flag.NewFlagSet("drain", flag.ContinueOnError)
	wait := fs.Duration("wait", time.Minute, "how long a running operator has to finalize the deleted jobs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set, err := settings.Load(env)
	if err != nil {
		return err
	}
	if set.Namespace == "" {
		return errors.New(app.EnvPrefix + "NAMESPACE (or POD_NAMESPACE) is required: the namespace whose jobs go")
	}
	store, err := objstore.NewS3(ctx, set.S3)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(kube, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	d, err := controller.Drain(ctx, c, store, set.Namespace, *wait)
	if err != nil {
		return err
	}
	fmt.Printf("drained %s: %d export jobs, %d finalized by the operator, %d here\n", set.Namespace, d.Jobs, d.ByOperator, d.Jobs-d.ByOperator)
	return nil
}

func ptr[T any](v T) *T { return &v }
