// Package http serves the AMM tag: GET /amm/position, /amm/bidAskPrice, /amm/oraclePrice,
// /amm/spreads and /amm/openInterest, each a series sampled from the rollup.
package http

import (
	"context"
	nethttp "net/http"
	"strconv"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/amm"
)

// Cache-Control of the answers: a window that ended a while ago will not change (but for states
// arriving very late), one that reaches the present changes as states arrive, at the series'
// resolution.
const (
	finishedCache = "public, max-age=3600"
	liveCache     = "public, max-age=10"
	// settle is how long after its end a window is taken as finished: time for the last states of
	// its final bucket to be ingested.
	settle = 60
)

// Routes registers the five series on api. Their errors are the spec's: 400 {success:false,message}
// for bad input, 500 {success:false} for any server failure.
func Routes(api *httpapi.API, store amm.Store) {
	h := &handlers{api: api, store: store}
	for _, s := range amm.All {
		api.Handle(nethttp.MethodGet, "/amm/"+s.Name(), h.series(s), httpapi.BareServerFailures(), httpapi.CacheControl(liveCache))
	}
}

type handlers struct {
	api   *httpapi.API
	store amm.Store
}

// Query is a series request's parameters, checked.
type Query struct {
	Market     string
	Start, End int64
	Samples    int
}

// ParseQuery reads and checks marketName, start, end and samples; every violation is a fault.Invalid
// naming the parameter.
func ParseQuery(r *nethttp.Request) (Query, error) {
	q := r.URL.Query()
	var out Query
	if out.Market = q.Get("marketName"); out.Market == "" {
		return Query{}, fault.Errorf(fault.Invalid, "marketName is required")
	}
	var err error
	if out.Start, err = requiredInt(q.Get("start"), "start"); err != nil {
		return Query{}, err
	}
	if out.End, err = requiredInt(q.Get("end"), "end"); err != nil {
		return Query{}, err
	}
	if out.Start >= out.End {
		return Query{}, fault.Errorf(fault.Invalid, "start must be less than end")
	}
	samples, err := httpapi.QueryInt(r, "samples", amm.MaxSamples, 1, amm.MaxSamples)
	if err != nil {
		return Query{}, err
	}
	out.Samples = int(samples)
	return out, nil
}

func requiredInt(v, name string) (int64, error) {
	if v == "" {
		return 0, fault.Errorf(fault.Invalid, "%s is required", name)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fault.Errorf(fault.Invalid, "%s must be an integer (unix seconds)", name)
	}
	return n, nil
}

func (h *handlers) series(s amm.Series) httpapi.Func {
	return func(r *nethttp.Request) (any, error) {
		q, err := ParseQuery(r)
		if err != nil {
			return nil, err
		}
		ctx := r.Context()
		m, err := h.store.Market(ctx, q.Market)
		if fault.CodeOf(err) == fault.NotFound {
			return nil, fault.Errorf(fault.Invalid, "marketName %s is not a known market", q.Market)
		}
		if err != nil {
			return nil, err
		}
		if s.PerpOnly() && m.Type != events.MarketTypePerp {
			return nil, fault.Errorf(fault.Invalid, "marketName %s is a spot market: only perp markets have the %s series", q.Market, s.Name())
		}
		now := h.api.Now().Unix()
		// The instants of the window up to now, from the earliest time a state can have.
		w := amm.NewWindow(q.Start, q.End, q.Samples).Until(now).From(events.MinTs)
		cc := liveCache
		if q.End < now-settle {
			cc = finishedCache
		}
		// The rows are sampled as the answer is written, straight from the rollup's chunks in the
		// database driver's buffer.
		body := httpapi.AppendJSONFrom(32+w.Count*amm.RowBytes(s), func(ctx context.Context, dst []byte) ([]byte, error) {
			dst = append(dst, `{"success":true,"data":[`...)
			dst, _, err := amm.Sample(ctx, h.store, q.Market, s, w, dst)
			if err != nil {
				return nil, err
			}
			return append(dst, "]}"...), nil
		})
		return answer{Responder: body, cacheControl: cc}, nil
	}
}

// answer is a series' JSON with the Cache-Control its window earns.
type answer struct {
	httpapi.Responder
	cacheControl string
}

func (a answer) Respond(w nethttp.ResponseWriter, r *nethttp.Request) error {
	w.Header().Set("Cache-Control", a.cacheControl)
	return a.Responder.Respond(w, r)
}
