package devstack

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/local"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/objstore"
)

// downloadsPrefix is where the edge serves export files of the local store.
const downloadsPrefix = "/downloads"

type exportOptions struct {
	dir      string                       // the local store's folder
	baseURL  string                       // public URL of the downloads route
	sources  map[v1alpha1.FileType]string // the internal base URL of the service serving each file type
	registry prometheus.Registerer
	logger   *slog.Logger
}

// Exports are the dev stack's export jobs and the store holding their files.
type Exports struct {
	Jobs  export.Jobs
	Files objstore.Store
}

type exports struct {
	jobs  export.Jobs
	store objstore.Store
	url   string // the download handler, for the edge router
}

// startExports runs the export runner (the operator's state machine without a cluster) on a local
// folder store, and serves the store's signed download URLs, as members of g.
func startExports(g *app.Group, o exportOptions) (*exports, error) {
	// A key per run: URLs handed out before a restart stop working, like the in-memory jobs they
	// belonged to.
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never returns an error
	store, err := objstore.NewLocal(objstore.LocalConfig{Dir: o.dir, BaseURL: o.baseURL, Key: key, Logger: o.logger})
	if err != nil {
		return nil, fmt.Errorf("export store: %w", err)
	}
	runner, err := local.New(export.Config{}, export.Deps{
		Store: store, Source: export.HTTPSource{Endpoints: o.sources, Client: &http.Client{}}, Logger: o.logger,
	}, o.registry)
	if err != nil {
		return nil, err
	}
	ln, err := listen()
	if err != nil {
		return nil, err
	}
	g.Add("exports", runner.Run)
	g.Add("downloads", func(ctx context.Context) error {
		return app.ServeListener(ctx, ln, http.StripPrefix(downloadsPrefix, store.Handler()), 5*time.Second, o.logger)
	})
	return &exports{jobs: runner, store: store, url: "http://" + ln.Addr().String()}, nil
}
