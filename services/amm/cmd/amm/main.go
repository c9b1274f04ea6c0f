// Command amm serves the AMM tag: it consumes the protocol's per-slot market states into the amm
// schema (raw states by day, and a rollup of the last state of every 20 seconds) and answers
// /amm/position, /amm/bidAskPrice, /amm/oraclePrice, /amm/spreads and /amm/openInterest over REST.
// Configuration: the TIDEMARK_* variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/amm/service"
)

func main() { kit.Main(service.Service(service.Config{})) }
