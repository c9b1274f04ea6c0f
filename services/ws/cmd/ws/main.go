// Command ws is the WebSocket edge: it reads the edge topics and serves GET /ws (candle, markets,
// pricing and notifications channels). Configuration: the TIDEMARK_* variables of the README.
package main

import "github.com/tidemark/tidemark/services/ws/service"

func main() { service.Main() }
