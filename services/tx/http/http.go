// Package http serves the Transactions tag (BETA, for test use): POST routes that build unsigned
// transactions of the protocol and one that forwards a signed transaction.
package http

import (
	"context"
	"net/http"

	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/tx"
)

// Routes registers the group's routes on api.
func Routes(api *httpapi.API, b *tx.Builder) {
	post(api, "/tx/deposit", func(ctx context.Context, r tx.DepositRequest) (any, error) { return b.Deposit(ctx, r, false) })
	post(api, "/tx/withdraw", func(ctx context.Context, r tx.DepositRequest) (any, error) { return b.Deposit(ctx, r, true) })
	post(api, "/tx/order/place", func(ctx context.Context, r tx.OrderRequest) (any, error) { return b.PlaceOrder(ctx, r) })
	post(api, "/tx/order/cancel", func(ctx context.Context, r tx.CancelRequest) (any, error) { return b.CancelOrders(ctx, r) })
	post(api, "/tx/settlePnl", func(ctx context.Context, r tx.SettleRequest) (any, error) { return b.SettlePnl(ctx, r) })
	post(api, "/tx/builder/init", func(ctx context.Context, r tx.BuilderInitRequest) (any, error) { return b.BuilderInit(ctx, r) })
	post(api, "/tx/builder/approve", func(ctx context.Context, r tx.BuilderApproveRequest) (any, error) { return b.BuilderApprove(ctx, r) })
	post(api, "/tx/execute", func(ctx context.Context, r tx.ExecuteRequest) (any, error) { return b.Execute(ctx, r) })
}

// post registers a route whose body decodes strictly into a B (no unknown property, at most
// tx.MaxBody bytes) before f sees it.
func post[B any](api *httpapi.API, path string, f func(context.Context, B) (any, error)) {
	api.Handle(http.MethodPost, path, func(r *http.Request) (any, error) {
		var body B
		if err := httpapi.DecodeJSON(r, tx.MaxBody, &body); err != nil {
			return nil, err
		}
		return f(r.Context(), body)
	}, httpapi.CacheControl("no-store"))
}
