package series

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// Set is the series of one service's schema, ready to be served.
type Set struct {
	list     []*compiled
	store    *store
	exporter *exporter
	logger   *slog.Logger
}

// New compiles the declarations of the series stored in schema. A declaration that does not hold
// together (a predicate naming no path variable, a dated route that does not extend the path, two
// series exporting one file type) is refused here, at start-up.
func New(pool *pgxpool.Pool, schema string, list []Series, cfg ExportConfig, logger *slog.Logger) (*Set, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	set := &Set{store: newStore(pool), exporter: newExporter(pool, cfg), logger: logger}
	fileTypes := map[string]string{}
	for _, s := range list {
		c, err := compile(s, schema)
		if err != nil {
			return nil, err
		}
		if e := s.Export; e != nil {
			if other, dup := fileTypes[e.FileType]; dup {
				return nil, fmt.Errorf("series %s and %s both export %s", other, s.Name, e.FileType)
			}
			fileTypes[e.FileType] = s.Name
		}
		set.list = append(set.list, c)
	}
	return set, nil
}

// FileTypes lists the export file types the set serves, in declaration order.
func (set *Set) FileTypes() []string {
	var out []string
	for _, c := range set.list {
		if c.Export != nil {
			out = append(out, c.Export.FileType)
		}
	}
	return out
}

// Routes registers every series' rolling and dated routes on api.
func (set *Set) Routes(api *httpapi.API) {
	for _, c := range set.list {
		// Bots poll the same newest pages: concurrent identical requests share one read, each
		// answered by a read begun after it arrived, so the crowd costs the database one query at a
		// time.
		api.Handle(http.MethodGet, c.Path, set.rolling(api, c), httpapi.CacheControl("public, max-age=2"), httpapi.Coalesce())
		if c.Dated != "" {
			api.Handle(http.MethodGet, c.Dated, set.dated(api, c), httpapi.CacheControl("public, max-age=30"), httpapi.Coalesce())
		}
	}
}

// scope reads the path variables of c from r: their values as query arguments, and by name.
func (c *compiled) scope(r *http.Request) ([]any, map[string]string) {
	byName := make(map[string]string, len(c.vars))
	args := make([]any, len(c.vars))
	for i, v := range c.vars {
		val := httpapi.PathVar(r, v)
		byName[v], args[i] = val, val
	}
	return args, byName
}

// tokenScope binds a page token to the path it came from ("market/SOL-PERP/trades"), so that it
// cannot be replayed on another series or scope.
func (c *compiled) tokenScope(byName map[string]string) string {
	return strings.TrimPrefix(pathVar.ReplaceAllStringFunc(c.Path, func(m string) string {
		return byName[m[1:len(m)-1]]
	}), "/")
}

func (set *Set) rolling(api *httpapi.API, c *compiled) httpapi.Func {
	return func(r *http.Request) (any, error) {
		limit := httpapi.DatedPageSize
		if c.Limit.Max > 0 {
			l, err := httpapi.QueryInt(r, "limit", int64(c.Limit.Default), 1, int64(c.Limit.Max))
			if err != nil {
				return nil, err
			}
			limit = int(l)
		}
		args, byName := c.scope(r)
		if c.Check != nil {
			if err := c.Check(r.Context(), byName); err != nil {
				return nil, err
			}
		}
		scope := c.tokenScope(byName)
		now := api.Now()
		since := now.Add(-httpapi.RollingWindow).Unix()
		// The ingest accepts events up to a day ahead of its clock (events.MaxClockSkew).
		until := now.Add(events.MaxClockSkew).Unix()
		after, err := httpapi.PageAfter[Cursor](api, r, scope)
		if err != nil {
			return nil, err
		}
		rows, err := set.store.rolling(r.Context(), c, args, since, until, after, limit+1)
		if err != nil {
			return nil, err
		}
		rows, next := httpapi.NextPage(api, scope, rows, limit, func(r Row) any { return r.Cursor })
		return httpapi.RawList{Records: records(rows), Meta: httpapi.RollingMeta{NextPage: next}}, nil
	}
}

func (set *Set) dated(api *httpapi.API, c *compiled) httpapi.Func {
	return func(r *http.Request) (any, error) {
		now := api.Now()
		start, end, label, err := httpapi.ParseDatedPath(r, now, c.withDay)
		if err != nil {
			return nil, err
		}
		page, err := httpapi.DatedPage(r)
		if err != nil {
			return nil, err
		}
		format, err := httpapi.Format(r)
		if err != nil {
			return nil, err
		}
		args, byName := c.scope(r)
		if c.Check != nil {
			if err := c.Check(r.Context(), byName); err != nil {
				return nil, err
			}
		}
		rows, total, err := set.store.dated(r.Context(), c, args, start, end, (page-1)*httpapi.DatedPageSize, httpapi.DatedPageSize)
		if err != nil {
			return nil, err
		}
		if format == "csv" {
			id := ""
			if len(c.vars) > 0 {
				id = byName[c.vars[0]]
			}
			return &csvPage{filename: httpapi.CSVFilename(c.entity, id, c.Name, label), layout: c.Record, rows: rows}, nil
		}
		return httpapi.RawList{Records: records(rows), Meta: httpapi.NewDatedMeta(total, page, len(rows), end > now.Unix())}, nil
	}
}

func records(rows []Row) []json.RawMessage {
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		out[i] = r.Record
	}
	return out
}
