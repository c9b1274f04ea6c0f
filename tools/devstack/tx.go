package devstack

import (
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

// startTx adds the tx service to g: it builds transactions from the simulated chain's accounts,
// read over the chain's JSON-RPC at chainURL as a cluster's replica reads its endpoint, with the
// chain's lookup tables where mainnet's would be configured.
func startTx(g *app.Group, chainURL string, chain *simchain.Chain, reg *prometheus.Registry, log *slog.Logger) (served, error) {
	var tables []string
	for _, k := range chain.LookupTables() {
		tables = append(tables, k.String())
	}
	// The markets are read every second, as the indexer reads them here: a stack is ready soon after
	// it starts, and the simulated chain is on loopback.
	s, err := txservice.New(txservice.Config{RPC: rpc.Endpoint{URL: chainURL}, LookupTables: tables, MarketsInterval: time.Second},
		txservice.Deps{Logger: log, Registry: reg})
	if err != nil {
		return served{}, err
	}
	return serve(g, txservice.Name, s.Run, s.Handler(), app.InternalMux(reg, s.Ready), log)
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
