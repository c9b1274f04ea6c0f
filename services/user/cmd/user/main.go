// Command user serves the User tag: it consumes the protocol's fills, orders, order actions, funding
// payments, liquidations, deposits, swaps, settlements, LP records and account snapshots into the user
// schema and answers /user/{accountId}/... over REST. Configuration: the TIDEMARK_* variables of the
// README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/user/service"
)

func main() { kit.Main(service.Service()) }
