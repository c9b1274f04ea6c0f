// Command indexer reads the protocol's history from a Solana JSON-RPC endpoint and writes its events
// to the protocol topics, with its checkpoint in the indexer schema. Configuration: the TIDEMARK_*
// variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/indexer/service"
)

func main() { kit.Main(service.Service(service.Config{})) }
