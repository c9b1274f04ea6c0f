package service_test

import (
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
)

func TestSmoke(t *testing.T) {
	s := start(t)
	s.Ingest(t, encode(t, events.TopicFills, kittest.Fill(solPerp, at("2026-11-19T12:00:00Z"), 1, 150_000_000, 1_000_000_000, 150_100_000))...)
	for _, p := range []string{"/stats/markets", "/stats/markets/prices", "/stats/markets/volume/24h", "/stats/markets/volume?startTs=1763550000&endTs=1763560000",
		"/stats/fundingRates", "/stats/liquidations", "/stats/bankruptcies", "/stats/insuranceFundSwaps", "/stats/leaderboard?sort=maker",
		"/stats/leaderboard/" + key(2), "/stats/USDC/rateHistory/deposit", "/stats/vaults", "/stats/insuranceFund", "/params", "/vaults",
		"/external/aggregator/contracts"} {
		rec := s.Get(t, p)
		t.Logf("%s %d %s", p, rec.Code, rec.Body.String())
	}
}
