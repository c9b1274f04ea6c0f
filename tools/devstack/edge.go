package devstack

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/kafka"
	wsservice "github.com/tidemark/tidemark/services/ws/service"
)

// wsExamples is what the banner shows of the WebSocket edge.
var wsExamples = []string{
	`{"type":"subscribe","channelType":"candle","symbol":"SOL-PERP","resolution":"1"}`,
	`{"type":"subscribe","channelType":"markets"}`,
	`{"type":"subscribe","channelType":"pricing"}`,
}

// startEdge adds the WebSocket edge to g: it warms from the internal ports of the services of the
// mesh that own its snapshots (market's candles; stats' markets and pricing once stats runs), asks
// notify for the seq of a wallet's channel it has read nothing of, and reads the edge topics from the
// stack's broker.
func startEdge(g *app.Group, kc kafka.Config, internal map[string]string, reg *prometheus.Registry, log *slog.Logger) (served, error) {
	e := wsservice.New(wsservice.Config{MarketURL: internal["market"], StatsURL: internal["stats"], NotifyURL: internal["notify"]}, wsservice.Deps{
		Kafka: kafka.Config{Brokers: kc.Brokers, ClientID: "devstack-ws"}, Logger: log, Registry: reg,
		ShutdownTimeout: 2 * time.Second,
	})
	return serve(g, wsservice.Name, e.Run, e.Handler(), app.InternalMux(reg, e.Ready), log)
}
