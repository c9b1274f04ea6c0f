// Package http serves the Authority tag's snapshot series, account list and export API; the stake
// and LP mint/redeem series are declared in service/.
package http

import (
	"cmp"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"slices"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/snapshots"
	"github.com/tidemark/tidemark/services/authority"
)

// pageSize is how many export jobs a page holds.
const pageSize = 20

// Routes registers the snapshot, account and export routes on api.
func Routes(api *httpapi.API, store authority.Store, exports *authority.Exports) {
	h := &handlers{api: api, store: store, exports: exports}
	hourly := []httpapi.RouteOption{httpapi.CacheControl("public, max-age=60"), httpapi.Coalesce()}
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/snapshots/overview", h.overview, hourly...)
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/snapshots/trading", h.accountSeries(authority.SnapshotTrading), hourly...)
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/snapshots/earn", h.accountSeries(authority.SnapshotEarn), hourly...)
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/snapshots/vaults", h.accountSeries(authority.SnapshotVault), hourly...)
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/snapshots/referrals", h.referrals, hourly...)
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/accounts", h.accounts,
		httpapi.CacheControl("public, max-age=2"), httpapi.Coalesce())
	// Export answers change as jobs run, and a download URL is a credential: no cache keeps them.
	api.Handle(nethttp.MethodPost, "/authority/{authorityId}/exports", h.createExport, httpapi.CacheControl("no-store"))
	api.Handle(nethttp.MethodGet, "/authority/{authorityId}/exports", h.listExports, httpapi.CacheControl("no-store"))
}

type handlers struct {
	api     *httpapi.API
	store   authority.Store
	exports *authority.Exports
}

// wallet reads and checks the authorityId path variable.
func wallet(r *nethttp.Request) (string, error) {
	a := httpapi.PathVar(r, "authorityId")
	return a, authority.CheckAuthority(a)
}

// series reads the wallet and the points of the days parameter.
func (h *handlers) series(r *nethttp.Request) (string, snapshots.Points, error) {
	auth, err := wallet(r)
	if err != nil {
		return "", snapshots.Points{}, err
	}
	days, err := snapshots.Days(r)
	if err != nil {
		return "", snapshots.Points{}, err
	}
	return auth, snapshots.PointsOf(h.api.Now(), days), nil
}

func (h *handlers) overview(r *nethttp.Request) (any, error) {
	auth, p, err := h.series(r)
	if err != nil {
		return nil, err
	}
	snaps, err := h.store.Snapshots(r.Context(), auth,
		[]string{authority.SnapshotTrading, authority.SnapshotEarn, authority.SnapshotVault}, p)
	if err != nil {
		return nil, err
	}
	metrics, err := metricsOf(snaps)
	if err != nil {
		return nil, err
	}
	return httpapi.AppendJSON(sizeOf(snaps), func(b []byte) []byte {
		b = append(b, `{"success":true,"products":{"trade":`...)
		b = appendSeries(b, snaps.ByKind[authority.SnapshotTrading], metrics)
		b = append(b, `,"earn":`...)
		b = appendSeries(b, snaps.ByKind[authority.SnapshotEarn], nil)
		b = append(b, `,"vaults":`...)
		b = appendSeries(b, snaps.ByKind[authority.SnapshotVault], nil)
		return append(b, "}}\n"...)
	}), nil
}

func (h *handlers) accountSeries(kind string) httpapi.Func {
	return func(r *nethttp.Request) (any, error) {
		auth, p, err := h.series(r)
		if err != nil {
			return nil, err
		}
		snaps, err := h.store.Snapshots(r.Context(), auth, []string{kind}, p)
		if err != nil {
			return nil, err
		}
		var metrics map[string][]byte
		if kind == authority.SnapshotTrading {
			if metrics, err = metricsOf(snaps); err != nil {
				return nil, err
			}
		}
		return httpapi.AppendJSON(sizeOf(snaps), func(b []byte) []byte {
			b = append(b, `{"success":true,"accounts":`...)
			b = appendSeries(b, snaps.ByKind[kind], metrics)
			return append(b, "}\n"...)
		}), nil
	}
}

func (h *handlers) referrals(r *nethttp.Request) (any, error) {
	auth, p, err := h.series(r)
	if err != nil {
		return nil, err
	}
	pts, err := h.store.Referrals(r.Context(), auth, p)
	if err != nil {
		return nil, err
	}
	return struct {
		Success   bool              `json:"success"`
		Snapshots []json.RawMessage `json:"snapshots"`
	}{true, pts}, nil
}

// metricsOf encodes each account's metrics from its latest trading snapshot; an account without one
// has none (null).
func metricsOf(snaps authority.Snapshots) (map[string][]byte, error) {
	out := make(map[string][]byte, len(snaps.Latest))
	for account, rec := range snaps.Latest {
		var m snapshots.TradingMetrics
		if err := json.Unmarshal(rec, &m); err != nil {
			return nil, fmt.Errorf("read the metrics of %s: %w", account, err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[account] = b
	}
	return out, nil
}

// sizeOf is about the size of the answer of snaps.
func sizeOf(snaps authority.Snapshots) int {
	n := 256
	for _, list := range snaps.ByKind {
		for _, s := range list {
			n += 128
			for _, p := range s.Snapshots {
				n += len(p) + 5
			}
		}
	}
	return n
}

// appendSeries appends [{"accountId":..,"snapshots":[..](,"metrics":..)}, ...]; metrics nil leaves
// the field out, and an account absent from it has metrics null.
func appendSeries(b []byte, list []authority.Series, metrics map[string][]byte) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"accountId":`...)
		b = appendString(b, s.AccountID)
		b = append(b, `,"snapshots":[`...)
		for j, p := range s.Snapshots {
			if j > 0 {
				b = append(b, ',')
			}
			if p == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, p...)
			}
		}
		b = append(b, ']')
		if metrics != nil {
			b = append(b, `,"metrics":`...)
			if m, ok := metrics[s.AccountID]; ok {
				b = append(b, m...)
			} else {
				b = append(b, "null"...)
			}
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

func (h *handlers) accounts(r *nethttp.Request) (any, error) {
	auth, err := wallet(r)
	if err != nil {
		return nil, err
	}
	list, err := h.store.Accounts(r.Context(), auth)
	if err != nil {
		return nil, err
	}
	return struct {
		Success bool `json:"success"`
		authority.AccountList
	}{true, list}, nil
}

func (h *handlers) createExport(r *nethttp.Request) (any, error) {
	auth, err := wallet(r)
	if err != nil {
		return nil, err
	}
	// A body announced as too large is refused unread; one that turns out so, after the limit.
	if r.ContentLength > authority.MaxExportBody {
		return nil, fault.Errorf(fault.Invalid, "request body exceeds %d bytes", authority.MaxExportBody)
	}
	var body json.RawMessage
	if err := httpapi.DecodeJSON(r, authority.MaxExportBody, &body); err != nil {
		return nil, err
	}
	req, err := authority.ParseExportRequest(body)
	if err != nil {
		return nil, err
	}
	job, err := h.exports.Create(r.Context(), auth, req)
	if err != nil {
		return nil, err
	}
	return struct {
		Success   bool   `json:"success"`
		RequestID string `json:"requestId"`
		Status    string `json:"status"`
	}{true, job.Name, h.exports.Status(job)}, nil
}

// jobCursor is where a page of jobs ends: the last job's creation (unix seconds) and name. A wallet has
// few jobs (finished ones are deleted after a week), so pages are cut from the whole list.
type jobCursor struct {
	Created int64  `json:"c"`
	Name    string `json:"n"`
}

// before reports whether job comes after c in the list's order (newest first, then by name).
func (c *jobCursor) before(job *v1alpha1.ExportJob) bool {
	created := job.CreationTimestamp.Unix()
	return created < c.Created || (created == c.Created && job.Name < c.Name)
}

func (h *handlers) listExports(r *nethttp.Request) (any, error) {
	auth, err := wallet(r)
	if err != nil {
		return nil, err
	}
	scope := "authority/" + auth + "/exports"
	after, err := httpapi.PageAfter[jobCursor](h.api, r, scope)
	if err != nil {
		return nil, err
	}
	jobs, err := h.exports.List(r.Context(), auth)
	if err != nil {
		return nil, err
	}
	// The order of the page token: creation times are whole seconds in the API server, so the
	// runner's finer ones are read as it would store them.
	slices.SortStableFunc(jobs, func(a, b v1alpha1.ExportJob) int {
		return cmp.Or(cmp.Compare(b.CreationTimestamp.Unix(), a.CreationTimestamp.Unix()), cmp.Compare(b.Name, a.Name))
	})
	var page []*v1alpha1.ExportJob
	for i := range jobs {
		if after == nil || after.before(&jobs[i]) {
			page = append(page, &jobs[i])
			if len(page) > pageSize {
				break
			}
		}
	}
	page, next := httpapi.NextPage(h.api, scope, page, pageSize, func(j *v1alpha1.ExportJob) any {
		return jobCursor{Created: j.CreationTimestamp.Unix(), Name: j.Name}
	})
	records := make([]authority.Record, len(page))
	for i, j := range page {
		if records[i], err = h.exports.Record(r.Context(), j); err != nil {
			return nil, err
		}
	}
	return struct {
		Success bool                `json:"success"`
		Records []authority.Record  `json:"records"`
		Meta    httpapi.RollingMeta `json:"meta"`
	}{true, records, httpapi.RollingMeta{NextPage: next}}, nil
}
