// Command stats serves the Stats tag, /params, /vaults and /external/aggregator/contracts: it consumes
// the protocol's fills, new users, settlements, market states, funding rates, liquidations,
// insurance-fund flows and stakes, deposits, swaps, vaults and parameters into the stats schema,
// answers over REST, and publishes the live market summaries and pricing to edge.markets and
// edge.pricing. Configuration: the TIDEMARK_* variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/stats/service"
)

func main() { kit.Main(service.Service()) }
