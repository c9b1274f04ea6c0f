package devstack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/chain/drift"
	"github.com/tidemark/tidemark/platform/chain/rpc"
	"github.com/tidemark/tidemark/platform/chain/solana"
	txservice "github.com/tidemark/tidemark/services/tx/service"
	"github.com/tidemark/tidemark/tools/sim"
	"github.com/tidemark/tidemark/tools/simchain"
)

// txService is the tx service of the stack.
type txService struct {
	public, internal string // base URLs
}

// startTx adds the tx service to g: it builds transactions from the simulated chain's accounts,
// read over the chain's JSON-RPC at chainURL as a cluster's replica reads its endpoint, with the
// chain's lookup tables where mainnet's would be configured.
func startTx(g *app.Group, chainURL string, chain *simchain.Chain, reg *prometheus.Registry, log *slog.Logger) (txService, error) {
	var tables []string
	for _, k := range chain.LookupTables() {
		tables = append(tables, k.String())
	}
	// The markets are read every second, as the indexer reads them here: a stack is ready soon after
	// it starts, and the simulated chain is on loopback.
	s, err := txservice.New(txservice.Config{RPC: rpc.Endpoint{URL: chainURL}, LookupTables: tables, MarketsInterval: time.Second},
		txservice.Deps{Logger: log, Registry: reg})
	if err != nil {
		return txService{}, err
	}
	publicLn, err := listen()
	if err != nil {
		return txService{}, err
	}
	internalLn, err := listen()
	if err != nil {
		return txService{}, err
	}
	g.Add(txservice.Name, s.Run)
	g.Add(txservice.Name+" public", func(ctx context.Context) error {
		return app.ServeListener(ctx, publicLn, s.Handler(), 5*time.Second, log)
	})
	g.Add(txservice.Name+" internal", func(ctx context.Context) error {
		return app.ServeListener(ctx, internalLn, app.InternalMux(reg, s.Ready), 5*time.Second, log)
	})
	return txService{public: "http://" + publicLn.Addr().String(), internal: "http://" + internalLn.Addr().String()}, nil
}

// txUser is the User account the banner's /tx example builds for: a's subaccount at the program's
// address for it (drift.UserAddress), which the simulated chain serves as it serves the address
// the records name.
func txUser(a sim.Account) (string, error) {
	k, err := solana.ParsePublicKey(a.Authority)
	if err != nil {
		return "", fmt.Errorf("simulated wallet %q: %w", a.Authority, err)
	}
	return drift.UserAddress(k, uint16(a.SubAccountID)).String(), nil
}
