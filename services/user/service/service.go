// Package service declares the user service to the kit: its schema, the topics it consumes, its
// series and its orders and snapshot routes. The command and the dev stack both run this declaration.
package service

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/series"
	"github.com/tidemark/tidemark/services/user"
	userhttp "github.com/tidemark/tidemark/services/user/http"
	"github.com/tidemark/tidemark/services/user/postgres"
	"github.com/tidemark/tidemark/services/user/postgres/migrations"
)

// Service declares the user service.
func Service() kit.Service {
	return kit.Service{
		Name: "user",
		// "user" is a reserved word of SQL: the schema is named so that hand-written SQL need not
		// quote it.
		Schema:     "users",
		Migrations: migrations.FS,
		Prefixes:   []string{"/user/"},
		Build: func(d kit.Deps) (kit.Parts, error) {
			store := postgres.NewStore(d.Pool, d.Schema)
			return kit.Parts{
				Sinks:  postgres.NewIngest(d.Schema).Sinks(),
				Series: Series(store, d.Schema),
				Routes: func(api *httpapi.API) { userhttp.Routes(api, store) },
			}, nil
		},
	}
}

// Series are the account's event series, each scoped by the account's key (and, for the per-market
// forms, a market's symbol).
func Series(store user.Store, schema string) []series.Series {
	marketsTable := pgx.Identifier{schema, "markets"}.Sanitize()
	// An export's market is resolved by the catalogue for records that name a market by its index.
	perpOf := fmt.Sprintf("(SELECT market_index FROM %s WHERE symbol = @market AND market_type = 'perp')", marketsTable)
	spotOf := fmt.Sprintf("(SELECT market_index FROM %s WHERE symbol = @market AND market_type = 'spot')", marketsTable)
	byAccount := []string{"account = @accountId"}
	accounts := "account = ANY(@accounts)"
	order := "ts, tx_sig, tx_sig_index, account"
	account := func(_ context.Context, vars map[string]string) error { return user.CheckAccount(vars["accountId"]) }
	accountAnd := func(kind func(events.Market) error) func(context.Context, map[string]string) error {
		return func(ctx context.Context, vars map[string]string) error {
			if err := user.CheckAccount(vars["accountId"]); err != nil {
				return err
			}
			m, err := store.Market(ctx, vars["symbol"])
			if err != nil {
				return err
			}
			return kind(m)
		}
	}
	anyMarket := func(events.Market) error { return nil }
	prediction := func(m events.Market) error { return markets.CheckFilter(m, events.FilterPrediction) }
	known := func(kind events.MarketType) func(context.Context, string) error {
		return func(ctx context.Context, symbol string) error {
			m, err := store.Market(ctx, symbol)
			if err != nil {
				return err
			}
			return markets.CheckType(m, kind)
		}
	}
	fills := series.LayoutOf[events.Fill]()
	deposits := series.LayoutOf[events.Deposit]()
	export := func(fileType, where, market string, kind events.MarketType) *series.Export {
		return &series.Export{FileType: fileType, Where: where, Accounts: accounts, Market: market, Order: order,
			CheckMarket: known(kind)}
	}
	return []series.Series{
		{Name: "trades", Table: "fills", Path: "/user/{accountId}/trades", Dated: "/user/{accountId}/trades/{year}/{month}",
			Where: byAccount, Record: fills, Check: account,
			Export: export("trades", "", "symbol = @market", "")},
		{Name: "trades", Table: "fills", Path: "/user/{accountId}/trades/{symbol}",
			Where: []string{"account = @accountId AND symbol = @symbol"}, Record: fills, Check: accountAnd(anyMarket)},
		{Name: "predictions", Table: "fills", Path: "/user/{accountId}/predictions", Dated: "/user/{accountId}/predictions/{year}/{month}",
			Where: []string{"account = @accountId AND prediction"}, Record: fills, Check: account},
		{Name: "predictions", Table: "fills", Path: "/user/{accountId}/predictions/{symbol}",
			Where: []string{"account = @accountId AND symbol = @symbol AND prediction"}, Record: fills, Check: accountAnd(prediction)},
		{Name: "swaps", Table: "swaps", Path: "/user/{accountId}/swaps", Dated: "/user/{accountId}/swaps/{year}/{month}",
			Where: byAccount, Record: series.LayoutOf[events.Swap](), Check: account,
			Export: export("swap-records", "", "in_symbol = @market OR out_symbol = @market", events.MarketTypeSpot)},
		{Name: "deposits", Table: "deposits", Path: "/user/{accountId}/deposits", Dated: "/user/{accountId}/deposits/{year}/{month}",
			Where: []string{"account = @accountId AND category = 'deposit'"}, Record: deposits, Check: account,
			Export: export("deposits", "category = 'deposit'", "symbol = @market", events.MarketTypeSpot)},
		{Name: "rewards", Table: "deposits", Path: "/user/{accountId}/rewards", Dated: "/user/{accountId}/rewards/{year}/{month}",
			Where: []string{"account = @accountId AND category = 'reward'"}, Record: deposits, Check: account,
			Export: export("rewards", "category = 'reward'", "symbol = @market", events.MarketTypeSpot)},
		{Name: "settlePnl", Table: "settle_pnl", Path: "/user/{accountId}/settlePnl", Dated: "/user/{accountId}/settlePnl/{year}/{month}",
			Where: byAccount, Record: series.LayoutOf[events.SettlePnl](), Check: account,
			Export: export("settle-pnl-records", "", "market_index = "+perpOf, events.MarketTypePerp)},
		{Name: "fundingPayments", Table: "funding_payments", Path: "/user/{accountId}/fundingPayments",
			Dated: "/user/{accountId}/fundingPayments/{year}/{month}", Where: byAccount,
			Record: series.LayoutOf[events.FundingPayment](), Check: account,
			Export: export("funding-payments", "", "market_index = "+perpOf, events.MarketTypePerp)},
		{Name: "liquidations", Table: "liquidations", Path: "/user/{accountId}/liquidations",
			Dated: "/user/{accountId}/liquidations/{year}/{month}", Where: byAccount,
			Record: series.LayoutOf[events.Liquidation](), Check: account,
			Export: export("liquidations", "", "perp_market = "+perpOf+" OR spot_market = "+spotOf, "")},
		{Name: "lp", Table: "lp", Path: "/user/{accountId}/lp", Dated: "/user/{accountId}/lp/{year}/{month}", Where: byAccount,
			Record: series.LayoutOf[events.PerpLP](), Check: account,
			Export: export("lp-records", "", "market_index = "+perpOf, events.MarketTypePerp)},
		// A closed position is the fill that closed it, kept beside the fill's row.
		{Name: "positions", Table: "fills", Column: "position", Path: "/user/{accountId}/positions",
			Where: []string{"account = @accountId AND position IS NOT NULL"}, Record: fills, Check: account},
	}
}
