// Command market serves the Market tag: it consumes protocol fills, funding rates, insurance-fund,
// IF-stake, swap and deposit topics into the market schema and answers /market/... over REST.
// Configuration: the TIDEMARK_* variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/market/service"
)

func main() { kit.Main(service.Service(service.Config{})) }
