// Package service declares the stats service to the kit: its schema, the topics it consumes, its
// routes, the edge topics it publishes and its background work (the edge publisher, the wallets'
// fold). The command and the dev stack both run this declaration; Build runs without a database too
// (tools/deploy calls it to read the parts it declares).
package service

import (
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	statshttp "github.com/tidemark/tidemark/services/stats/http"
	"github.com/tidemark/tidemark/services/stats/postgres"
	"github.com/tidemark/tidemark/services/stats/postgres/migrations"
)

// Service declares the stats service.
func Service() kit.Service {
	return kit.Service{
		Name:       "stats",
		Migrations: migrations.FS,
		// /params and /vaults are exact reads; the prefixes of the edge's routing table match them and
		// nothing else the API serves.
		Prefixes:  []string{"/stats/", "/params", "/vaults", "/external/"},
		Publishes: []string{events.TopicEdgeMarkets, events.TopicEdgePricing},
		Build: func(d kit.Deps) (kit.Parts, error) {
			store := postgres.NewStore(d.Pool, d.Schema)
			background := postgres.NewBackground(d.Pool, d.Schema, d.Now, d.WakeOutbox, d.Logger)
			return kit.Parts{
				Sinks:    postgres.NewIngest(d.Schema).Sinks(),
				Routes:   func(api *httpapi.API) { statshttp.Routes(api, store) },
				Internal: func(api *httpapi.API) { statshttp.Internal(api, store) },
				// Every replica runs it; the publisher and the fold each take turns under a lock.
				Jobs: []kit.Job{{Name: "background", Run: background.Run}},
			}, nil
		},
	}
}
