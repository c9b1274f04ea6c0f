// Command tx builds the protocol's unsigned transactions for the /tx routes (BETA, for test use)
// from chain state read over JSON-RPC, and forwards signed ones. Configuration: the TIDEMARK_*
// variables of the README.
package main

import "github.com/tidemark/tidemark/services/tx/service"

func main() { service.Main() }
