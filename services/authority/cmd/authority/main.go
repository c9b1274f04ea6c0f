// Command authority serves the Authority tag: it consumes the protocol's insurance fund stakes, LP
// mint/redeem records, new users and account snapshots into the authority schema, answers
// /authority/{authorityId}/... over REST, creates ExportJobs in its namespace and streams
// if-stake-records on its internal port. Configuration: the TIDEMARK_* variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/authority/service"
)

func main() { kit.Main(service.Service(service.Config{})) }
