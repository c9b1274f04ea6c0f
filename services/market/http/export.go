package http

import (
	"log/slog"
	nethttp "net/http"
	"strconv"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/services/market"
)

// maxExportTs bounds from and to (9999-12-31T23:59:59Z) so that no bound is past any record.
const maxExportTs = 253402300799

// exportType is one export file type the market service serves.
type exportType struct {
	series  market.Series
	allowed func(events.Market) error // for an export restricted to one market
	layout  *csvLayout
}

// Exports registers the export route on api, which belongs on the service's internal port:
//
//	GET /internal/exports/{fileType}?from=..&to=..[&market=SYMBOL][&accounts=a,b]
//
// fileType market-trades streams fills (what /market/{symbol}/trades lists; without market, the fills
// of every market, prediction markets included), funding-rates funding rate records (with market, a
// perp market's). Records have from <= ts <= to (unix seconds, both required, to - from at most 366
// days), oldest first by (ts, txSig, txSigIndex). accounts is accepted and ignored: these records
// belong to markets, not accounts. The answer is 200 text/csv: the record type's header row and one
// row per record, with the columns and bytes of the dated CSV endpoints, then the trailer
// Tidemark-Record-Count. If reading fails after the answer has started the connection is aborted, so a
// client never sees a clean short file. Every other file type is 404; bad parameters are 400; an
// unknown market, or one the file type has no records for, is 404.
//
// logger receives the failures of exports that had started (there is no answer left to carry them).
func Exports(api *httpapi.API, store market.Store, exporter market.Exporter, logger *slog.Logger) {
	layouts := csvLayouts()
	h := &exports{
		store:    store,
		exporter: exporter,
		logger:   logger,
		types: map[string]exportType{
			"market-trades": {market.Trades, anyMarket, layouts[market.Trades]},
			"funding-rates": {market.FundingRates, perpMarket, layouts[market.FundingRates]},
		},
	}
	api.Handle(nethttp.MethodGet, exportstream.PathPrefix+"{fileType}", h.export, httpapi.CacheControl("no-store"))
}

type exports struct {
	store    market.Store
	exporter market.Exporter
	logger   *slog.Logger
	types    map[string]exportType
}

func (h *exports) export(r *nethttp.Request) (any, error) {
	name := httpapi.PathVar(r, "fileType")
	typ, ok := h.types[name]
	if !ok {
		return nil, fault.Errorf(fault.NotFound, "export type %s is not served by the market service", name)
	}
	from, to, err := exportRange(r)
	if err != nil {
		return nil, err
	}
	q := market.ExportQuery{Series: typ.series, From: from, To: to}
	scope := "all"
	if sym := r.URL.Query().Get("market"); sym != "" {
		m, err := h.store.Market(r.Context(), sym)
		if err != nil {
			return nil, err
		}
		if err := typ.allowed(m); err != nil {
			return nil, err
		}
		q.Symbol, scope = m.Symbol, m.Symbol
	}
	return &exportStream{
		exporter: h.exporter,
		logger:   h.logger,
		fileType: name,
		filename: httpapi.CSVFilename("export", scope, name, strconv.FormatInt(from, 10)+"-"+strconv.FormatInt(to, 10)),
		layout:   typ.layout,
		query:    q,
	}, nil
}

// exportRange reads the required from and to query parameters.
func exportRange(r *nethttp.Request) (from, to int64, err error) {
	for _, name := range []string{"from", "to"} {
		if r.URL.Query().Get(name) == "" {
			return 0, 0, fault.Errorf(fault.Invalid, "%s is required (unix seconds)", name)
		}
	}
	if from, err = httpapi.QueryInt(r, "from", 0, 0, maxExportTs); err != nil {
		return 0, 0, err
	}
	if to, err = httpapi.QueryInt(r, "to", 0, 0, maxExportTs); err != nil {
		return 0, 0, err
	}
	if from > to {
		return 0, 0, fault.Errorf(fault.Invalid, "from must not be after to")
	}
	if to-from > exportstream.MaxRangeSeconds {
		return 0, 0, fault.Errorf(fault.Invalid, "the range from..to may span at most 366 days")
	}
	return from, to, nil
}

// exportStream writes one export as it is read.
type exportStream struct {
	exporter market.Exporter
	logger   *slog.Logger
	fileType string
	filename string
	layout   *csvLayout
	query    market.ExportQuery
}

// Respond implements httpapi.Responder. Nothing is written until the CSVWriter's buffer first fills
// (or the read ends), so that a query that fails at once is still answered as an error.
func (s *exportStream) Respond(w nethttp.ResponseWriter, r *nethttp.Request) error {
	declareTrailer := func(h nethttp.Header) { h.Set("Trailer", exportstream.RecordCountTrailer) }
	rows, started, err := writeCSV(w, s.filename, s.layout, declareTrailer, func(emit func([]byte) error) error {
		return s.exporter.Export(r.Context(), s.query, emit)
	})
	if err == nil {
		w.Header().Set(exportstream.RecordCountTrailer, strconv.FormatInt(rows, 10))
		return nil
	}
	if !started {
		return err // answered by the API's wrapper, which logs it
	}
	level := slog.LevelError
	if r.Context().Err() != nil {
		level = slog.LevelWarn // the client went away
	}
	s.logger.LogAttrs(r.Context(), level, "export cut short",
		slog.String("fileType", s.fileType), slog.String("market", s.query.Symbol),
		slog.Int64("from", s.query.From), slog.Int64("to", s.query.To),
		slog.Int64("rows", rows), slog.String("error", err.Error()))
	// A response that ended normally would look complete to a client that ignores the trailer: abort
	// the connection instead, so the body ends in an error.
	panic(nethttp.ErrAbortHandler)
}
