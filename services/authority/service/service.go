// Package service declares the authority service to the kit: its schema, the topics it consumes, its
// series (stakes and LP mint/redeem records, the if-stake-records export) and its snapshot, account and
// export routes. The command and the dev stack both run this declaration.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/services/authority"
	authorityhttp "github.com/tidemark/tidemark/services/authority/http"
	"github.com/tidemark/tidemark/services/authority/postgres"
	"github.com/tidemark/tidemark/services/authority/postgres/migrations"
)

// Config is the authority service's own configuration; zero values take the defaults.
type Config struct {
	// MaxUnfinishedExports is how many pending or running export jobs a wallet may have
	// (TIDEMARK_AUTHORITY_MAX_UNFINISHED_EXPORTS, default 5).
	MaxUnfinishedExports int
	// Namespace is where ExportJobs are created and listed (TIDEMARK_NAMESPACE), through the
	// Kubernetes API of the pod's ServiceAccount (or of KUBECONFIG outside a cluster).
	Namespace string
	// S3 is the export bucket the operator stores files in (TIDEMARK_S3_*): download URLs are
	// presigned with its credentials.
	S3 objstore.S3Config
	// Exports, when set, keeps the jobs and their files instead of the cluster and the bucket: the
	// dev stack hands its runner and folder store. It is not read from the environment.
	Exports *Exports
	// Clock is the export jobs' clock (default time.Now), which tests move: requests' retry window
	// and download windows are measured against the jobs' own times, which are real.
	Clock func() time.Time
}

// Exports are where export jobs and their files are kept.
type Exports struct {
	Jobs  export.Jobs
	Files objstore.Store
}

// RegisterEnv reads the TIDEMARK_AUTHORITY_MAX_UNFINISHED_EXPORTS, TIDEMARK_NAMESPACE and
// TIDEMARK_S3_* variables, and the cloud's credential variables (objstore.S3Config.RegisterEnv).
func (c *Config) RegisterEnv(e *app.Env) {
	c.MaxUnfinishedExports = e.Int("AUTHORITY_MAX_UNFINISHED_EXPORTS", authority.DefaultMaxUnfinished)
	c.Namespace = e.String("NAMESPACE", "")
	c.S3.RegisterEnv(e)
}

// SetDefaults sets a zero MaxUnfinishedExports to its default; the cluster settings have none.
func (c *Config) SetDefaults() {
	c.MaxUnfinishedExports = cmp.Or(c.MaxUnfinishedExports, authority.DefaultMaxUnfinished)
}

// Validate reports every value out of range, naming its variable.
func (c Config) Validate() error {
	var errs []error
	if c.MaxUnfinishedExports < 1 || c.MaxUnfinishedExports > 1000 {
		errs = append(errs, fmt.Errorf("%sAUTHORITY_MAX_UNFINISHED_EXPORTS must be 1..1000, got %d", app.EnvPrefix, c.MaxUnfinishedExports))
	}
	if c.Exports == nil {
		if c.Namespace == "" {
			errs = append(errs, fmt.Errorf("%sNAMESPACE is required: the namespace of the service's ExportJobs", app.EnvPrefix))
		}
		if err := c.S3.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%sS3_*: %w", app.EnvPrefix, err))
		}
	}
	return errors.Join(errs...)
}

// Service declares the authority service with cfg.
func Service(cfg Config) kit.Service {
	return kit.Configure(kit.Service{
		Name:       "authority",
		Migrations: migrations.FS,
		Prefixes:   []string{"/authority/"},
	}, cfg, func(d kit.Deps, cfg Config) (kit.Parts, error) {
		store := postgres.NewStore(d.Pool, d.Schema)
		ex := cfg.exports(d.Logger)
		exports := &authority.Exports{Jobs: ex.Jobs, Files: ex.Files, Store: store, MaxUnfinished: cfg.MaxUnfinishedExports,
			Now: cfg.Clock}
		return kit.Parts{
			Sinks:  postgres.NewIngest(d.Schema).Sinks(),
			Series: Series(store, d.Schema),
			Routes: func(api *httpapi.API) { authorityhttp.Routes(api, store, exports) },
		}, nil
	})
}

// exports are the configured ones, or the cluster's jobs and the S3 bucket, opened on first use.
func (c Config) exports(logger *slog.Logger) *Exports {
	if c.Exports != nil {
		return c.Exports
	}
	cl := &cluster{cfg: c, logger: logger}
	return &Exports{Jobs: clusterJobs{cl}, Files: clusterFiles{cl}}
}

// KubeJobs keeps export jobs as ExportJobs in namespace of the cluster kube: an uncached client, so
// that the service needs no more than to create and list them (its ServiceAccount's Role).
func KubeJobs(kube *rest.Config, namespace string) (export.Jobs, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("export job scheme: %w", err)
	}
	c, err := client.New(kube, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return export.KubeJobs{Client: c, Namespace: namespace}, nil
}

// Series are the wallet's event series, each scoped by its key.
func Series(store *postgres.Store, schema string) []series.Series {
	accounts := pgx.Identifier{schema, "accounts"}.Sanitize()
	marketsTable := pgx.Identifier{schema, "markets"}.Sanitize()
	wallet := func(_ context.Context, vars map[string]string) error {
		return authority.CheckAuthority(vars["authorityId"])
	}
	spot := func(ctx context.Context, symbol string) error {
		m, err := store.Market(ctx, symbol)
		if err != nil {
			return err
		}
		return markets.CheckType(m, events.MarketTypeSpot)
	}
	byWallet := []string{"authority = @authorityId"}
	return []series.Series{
		{Name: "insuranceFundStake", Table: "if_stakes", Path: "/authority/{authorityId}/insuranceFundStake",
			Dated: "/authority/{authorityId}/insuranceFundStake/{year}/{month}", Where: byWallet,
			Record: series.LayoutOf[events.IFStake](), Check: wallet,
			// An export names the wallet's accounts: its stakes are the wallet's that owns them.
			Export: &series.Export{FileType: "if-stake-records",
				Accounts:    "authority IN (SELECT authority FROM " + accounts + " WHERE account = ANY(@accounts) AND sub_account_id IS NOT NULL)",
				Market:      "market_index = (SELECT market_index FROM " + marketsTable + " WHERE symbol = @market AND market_type = 'spot')",
				CheckMarket: spot}},
		{Name: "lpMintRedeem", Table: "lp_mint_redeem", Path: "/authority/{authorityId}/lpMintRedeem",
			Dated: "/authority/{authorityId}/lpMintRedeem/{year}/{month}", Where: byWallet,
			Record: series.LayoutOf[events.LPMintRedeem](), Check: wallet},
	}
}
