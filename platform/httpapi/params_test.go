package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/httpapi"
)

func TestQueryParams(t *testing.T) {
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodGet, "/trades", func(r *http.Request) (any, error) {
		limit, err := httpapi.QueryInt(r, "limit", 20, 1, 50)
		if err != nil {
			return nil, err
		}
		format, err := httpapi.Format(r)
		if err != nil {
			return nil, err
		}
		page, err := httpapi.DatedPage(r)
		if err != nil {
			return nil, err
		}
		return map[string]any{"limit": limit, "format": format, "page": page}, nil
	})
	srv := mustServe(t, a)

	tests := []struct {
		query      string
		wantStatus int
		want       string // body on 200, message on 400
	}{
		{"", 200, `{"format":"json","limit":20,"page":1}`},
		{"?limit=", 200, `{"format":"json","limit":20,"page":1}`},
		{"?limit=1", 200, `{"format":"json","limit":1,"page":1}`},
		{"?limit=50&format=csv&page=3", 200, `{"format":"csv","limit":50,"page":3}`},
		{"?limit=0", 400, "limit must be an integer between 1 and 50"},
		{"?limit=51", 400, "limit must be an integer between 1 and 50"},
		{"?limit=-3", 400, "limit must be an integer between 1 and 50"},
		{"?limit=abc", 400, "limit must be an integer between 1 and 50"},
		{"?limit=2.5", 400, "limit must be an integer between 1 and 50"},
		{"?limit=99999999999999999999", 400, "limit must be an integer between 1 and 50"},
		{"?format=xml", 400, "format must be one of json, csv"},
		{"?format=CSV", 400, "format must be one of json, csv"},
		{"?page=0", 400, "page must be an integer between 1 and 10000000"},
		{"?page=x", 400, "page must be an integer between 1 and 10000000"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := mustGet(t, srv.URL+"/trades"+tt.query)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d, want %d (%s)", r.status, tt.wantStatus, r.body)
			}
			if tt.wantStatus == 200 {
				if r.body != tt.want+"\n" {
					t.Errorf("body = %s, want %s", r.body, tt.want)
				}
				return
			}
			if _, msg := errorEnvelope(t, r); msg != tt.want {
				t.Errorf("message = %q, want %q", msg, tt.want)
			}
		})
	}
}

func TestParseDatedPath(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 30, 0, 0, time.UTC)
	a := httpapi.New(httpapi.Options{Now: func() time.Time { return now }})
	dated := func(withDay bool) httpapi.Func {
		return func(r *http.Request) (any, error) {
			start, end, label, err := httpapi.ParseDatedPath(r, a.Now(), withDay)
			if err != nil {
				return nil, err
			}
			return map[string]any{"start": start, "end": end, "label": label}, nil
		}
	}
	a.Handle(http.MethodGet, "/trades/{year}/{month}/{day}", dated(true))
	a.Handle(http.MethodGet, "/trades/{year}/{month}", dated(false))
	srv := mustServe(t, a)

	day := func(y, m, d int) int64 { return time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() }
	tests := []struct {
		path      string
		wantMsg   string // "" = valid
		wantStart int64
		wantEnd   int64
		wantLabel string
	}{
		{path: "/trades/2021/12/31", wantMsg: "year must be an integer >= 2022"},
		{path: "/trades/abc/1/1", wantMsg: "year must be an integer >= 2022"},
		{path: "/trades/+2023/1/1", wantMsg: "year must be an integer >= 2022"},
		{path: "/trades/2023/0/1", wantMsg: "month must be an integer between 1 and 12"},
		{path: "/trades/2023/13/1", wantMsg: "month must be an integer between 1 and 12"},
		{path: "/trades/2023/1e1/1", wantMsg: "month must be an integer between 1 and 12"},
		{path: "/trades/2023/1/0", wantMsg: "day must be an integer between 1 and 31"},
		{path: "/trades/2023/1/32", wantMsg: "day must be an integer between 1 and 31"},
		{path: "/trades/2023/1/x", wantMsg: "day must be an integer between 1 and 31"},
		{path: "/trades/2023/2/30", wantMsg: "2023-02-30 is not a valid date"},
		{path: "/trades/2023/2/29", wantMsg: "2023-02-29 is not a valid date"},
		{path: "/trades/2025/4/31", wantMsg: "2025-04-31 is not a valid date"},
		{path: "/trades/2026/11/22", wantMsg: "2026-11-22 is in the future"},
		{path: "/trades/2031/1/1", wantMsg: "2031-01-01 is in the future"},
		{path: "/trades/2026/12", wantMsg: "2026-12 is in the future"},
		{path: "/trades/2024/2/29", wantStart: day(2024, 2, 29), wantEnd: day(2024, 3, 1), wantLabel: "2024-02-29"},
		{path: "/trades/2022/01/01", wantStart: day(2022, 1, 1), wantEnd: day(2022, 1, 2), wantLabel: "2022-01-01"},
		{path: "/trades/2025/12/31", wantStart: day(2025, 12, 31), wantEnd: day(2026, 1, 1), wantLabel: "2025-12-31"},
		{path: "/trades/2026/11/21", wantStart: day(2026, 11, 21), wantEnd: day(2026, 11, 22), wantLabel: "2026-11-21"},
		{path: "/trades/2026/11", wantStart: day(2026, 11, 1), wantEnd: day(2026, 12, 1), wantLabel: "2026-11"},
		{path: "/trades/2025/12", wantStart: day(2025, 12, 1), wantEnd: day(2026, 1, 1), wantLabel: "2025-12"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := mustGet(t, srv.URL+tt.path)
			if tt.wantMsg != "" {
				if r.status != http.StatusBadRequest {
					t.Fatalf("status = %d, want 400 (%s)", r.status, r.body)
				}
				if _, msg := errorEnvelope(t, r); msg != tt.wantMsg {
					t.Errorf("message = %q, want %q", msg, tt.wantMsg)
				}
				return
			}
			if r.status != http.StatusOK {
				t.Fatalf("status = %d (%s)", r.status, r.body)
			}
			var got struct {
				Start, End int64
				Label      string
			}
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatal(err)
			}
			if got.Start != tt.wantStart || got.End != tt.wantEnd || got.Label != tt.wantLabel {
				t.Errorf("got %+v, want start %d end %d label %s", got, tt.wantStart, tt.wantEnd, tt.wantLabel)
			}
		})
	}
}

func TestNewDatedMeta(t *testing.T) {
	ip := func(v int) *int { return &v }
	tests := []struct {
		name                  string
		total, page, returned int
		wantPages             int
		wantNext              *int
	}{
		{"no records", 0, 1, 0, 0, nil},
		{"one record", 1, 1, 1, 1, nil},
		{"exactly one page", 20, 1, 20, 1, nil},
		{"one more than a page, first", 21, 1, 20, 2, ip(2)},
		{"one more than a page, last", 21, 2, 1, 2, nil},
		{"middle page", 45, 2, 20, 3, ip(3)},
		{"past the end", 21, 5, 0, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := httpapi.NewDatedMeta(tt.total, tt.page, tt.returned, true)
			if *m.Records != tt.returned || *m.TotalRecords != tt.total || *m.CurrentPage != tt.page || *m.TotalPages != tt.wantPages {
				t.Errorf("meta = records %d total %d current %d pages %d", *m.Records, *m.TotalRecords, *m.CurrentPage, *m.TotalPages)
			}
			if (m.NextPage == nil) != (tt.wantNext == nil) || (m.NextPage != nil && *m.NextPage != *tt.wantNext) {
				t.Errorf("nextPage = %v, want %v", m.NextPage, tt.wantNext)
			}
			if m.IncludesLatest == nil || !*m.IncludesLatest {
				t.Errorf("includesLatest = %v", m.IncludesLatest)
			}
		})
	}

	b, err := json.Marshal(httpapi.NewDatedMeta(21, 2, 1, false))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"records":1,"totalRecords":21,"currentPage":2,"totalPages":2,"nextPage":null,"includesLatest":false}`
	if string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
}
