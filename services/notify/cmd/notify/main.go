// Command notify serves the Notifications tag: it makes notifications of the protocol's fills,
// liquidations, deposits, settlements and funding payments for the wallets that own the accounts
// (protocol.new-users), publishes each to edge.notifications, and answers /notifications to
// requests signed by the wallet. Configuration: the TIDEMARK_* variables of the README.
package main

import (
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/notify/service"
)

func main() { kit.Main(service.Service(service.Config{})) }
