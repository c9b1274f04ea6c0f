package service_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/authority/service"
)

// body is an export request body of fileType for keys over November 2026.
func body(fileType string, keys ...string) string {
	return fmt.Sprintf(`{"fileType":%q,"from":%d,"to":%d,"userPublicKeys":["%s"]}`, fileType,
		at("2026-11-01T00:00:00Z"), at("2026-11-30T23:59:59Z"), strings.Join(keys, `","`))
}

// TestExportRefusals: every refusal of the request body is a 400 naming what is wrong, and makes no job.
func TestExportRefusals(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	keys := func(n int) string {
		var ks []string
		for i := range n {
			ks = append(ks, `"`+key(100+i)+`"`)
		}
		return strings.Join(ks, ",")
	}
	const range_ = `"from":1763000000,"to":1763600000`
	cases := []struct {
		name, body, message string
	}{
		{"empty", ``, "request body is empty"},
		{"array", `[]`, "the body must be a JSON object"},
		{"string", `"trades"`, "the body must be a JSON object"},
		{"null", `null`, "the body must be a JSON object"},
		{"truncated", `{"fileType":"trades"`, "invalid JSON body"},
		{"trailing data", `{} {}`, "invalid JSON body: unexpected data after the JSON value"},
		{"unknown property", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `"],"format":"csv"}`, `unknown property "format"`},
		{"repeated property", `{"fileType":"trades","from":1,"from":2,"to":3,"userPublicKeys":["` + main + `"]}`, `property "from" appears twice`},
		{"no fileType", `{` + range_ + `,"userPublicKeys":["` + main + `"]}`, "fileType is required"},
		{"fileType number", `{"fileType":5,` + range_ + `,"userPublicKeys":["` + main + `"]}`, "fileType must be a string"},
		{"fileType null", `{"fileType":null,` + range_ + `,"userPublicKeys":["` + main + `"]}`, "fileType must be a string"},
		{"fileType unknown", `{"fileType":"orders",` + range_ + `,"userPublicKeys":["` + main + `"]}`, "fileType must be one of trades, market-trades, funding-rates"},
		{"no from", `{"fileType":"trades","to":5,"userPublicKeys":["` + main + `"]}`, "from is required"},
		{"from string", `{"fileType":"trades","from":"1","to":5,"userPublicKeys":["` + main + `"]}`, "from must be an integer"},
		{"from fraction", `{"fileType":"trades","from":1.5,"to":5,"userPublicKeys":["` + main + `"]}`, "from must be an integer (unix seconds), not 1.5"},
		{"from exponent", `{"fileType":"trades","from":1e3,"to":5000,"userPublicKeys":["` + main + `"]}`, "from must be an integer (unix seconds), not 1e3"},
		{"from negative", `{"fileType":"trades","from":-1,"to":5,"userPublicKeys":["` + main + `"]}`, "from must be >= 0"},
		{"to null", `{"fileType":"trades","from":1,"to":null,"userPublicKeys":["` + main + `"]}`, "to must be an integer"},
		{"to boolean", `{"fileType":"trades","from":1,"to":true,"userPublicKeys":["` + main + `"]}`, "to must be an integer"},
		{"to huge", `{"fileType":"trades","from":1,"to":99999999999999999999,"userPublicKeys":["` + main + `"]}`, "to must be at most 253402300799"},
		{"to past year 9999", `{"fileType":"trades","from":1,"to":253402300800,"userPublicKeys":["` + main + `"]}`, "to must be at most 253402300799"},
		{"from after to", `{"fileType":"trades","from":10,"to":9,"userPublicKeys":["` + main + `"]}`, "from must not be after to"},
		{"range too long", `{"fileType":"trades","from":0,"to":31622401,"userPublicKeys":["` + main + `"]}`, "the range from..to may span at most 366 days"},
		{"no keys", `{"fileType":"trades",` + range_ + `}`, "userPublicKeys is required"},
		{"keys not an array", `{"fileType":"trades",` + range_ + `,"userPublicKeys":"` + main + `"}`, "userPublicKeys must be an array of account keys"},
		{"keys empty", `{"fileType":"trades",` + range_ + `,"userPublicKeys":[]}`, "userPublicKeys needs at least 1 item"},
		{"keys too many", `{"fileType":"trades",` + range_ + `,"userPublicKeys":[` + keys(101) + `]}`, "userPublicKeys takes at most 100 items"},
		{"key malformed", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `","nope"]}`, "userPublicKeys[1] must be an account's public key"},
		{"key 33 bytes", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + strings.Repeat("z", 44) + `"]}`, "userPublicKeys[0] must be an account's public key"},
		{"key number", `{"fileType":"trades",` + range_ + `,"userPublicKeys":[5]}`, "userPublicKeys[0] must be an account's public key"},
		{"key repeated", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `","` + main + `"]}`, "userPublicKeys[1] repeats userPublicKeys[0]"},
		{"market number", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `"],"market":7}`, "market must be a string or null"},
		{"market malformed", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `"],"market":"SOL PERP"}`, "market must be a market symbol"},
		{"market missing", `{"fileType":"market-trades",` + range_ + `,"userPublicKeys":["` + main + `"]}`, "market is required for fileType market-trades"},
		{"market null", `{"fileType":"funding-rates",` + range_ + `,"userPublicKeys":["` + main + `"],"market":null}`, "market is required for fileType funding-rates"},
		{"another wallet's account", body("trades", main, builderAcct), "userPublicKeys: " + builderAcct + " is not an account of wallet " + wallet},
		{"unknown accounts", body("trades", key(70), key(71)), "userPublicKeys: " + key(70) + ", " + key(71) + " are not accounts of wallet"},
		{"too large", `{"fileType":"trades",` + range_ + `,"userPublicKeys":["` + main + `"],"market":"` + strings.Repeat("x", 70_000) + `"}`, "request body exceeds 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := s.post(t, "/authority/"+wallet+"/exports", c.body)
			msg, _ := errorMessage(rec.Body.Bytes())
			if rec.Code != http.StatusBadRequest || !strings.Contains(msg, c.message) {
				t.Fatalf("POST %.200s = %d %s, want 400 with %q", c.body, rec.Code, rec.Body, c.message)
			}
		})
	}
	if rec := s.post(t, "/authority/nope/exports", body("trades", main)); rec.Code != 400 || !strings.Contains(rec.Body.String(), "authorityId") {
		t.Errorf("a malformed wallet: %d %s", rec.Code, rec.Body)
	}
	if jobs, _ := s.runner.List(context.Background(), wallet); len(jobs) != 0 {
		t.Fatalf("refused requests made %d jobs", len(jobs))
	}

	// A body of unknown length is read no further than the limit: the rest is never asked for.
	src := &endless{}
	req := httptest.NewRequest(http.MethodPost, "/authority/"+wallet+"/exports", io.NopCloser(src))
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if msg, _ := errorMessage(rec.Body.Bytes()); rec.Code != 400 || msg != "request body exceeds 65536 bytes" || src.read > 65536+32*1024 {
		t.Fatalf("an endless body: %d %s after reading %d bytes", rec.Code, rec.Body, src.read)
	}
	// One announced as too large is not read at all.
	src = &endless{}
	req = httptest.NewRequest(http.MethodPost, "/authority/"+wallet+"/exports", io.NopCloser(src))
	req.ContentLength = 1 << 30
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 400 || src.read != 0 {
		t.Fatalf("a body announced at 1 GiB: %d after reading %d bytes", rec.Code, src.read)
	}
}

// endless is a body that never ends, counting what was read of it.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.read += len(p)
	return len(p), nil
}

func errorMessage(b []byte) (string, bool) {
	var e struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Success {
		return "", false
	}
	return e.Message, true
}

// TestExportThroughTheRunner: a request of the wallet's stake records becomes a job that the dev
// stack's runner streams from the service's internal port; the list shows it pending, then ready
// with its record count and a download URL that ends 8 hours after the file was stored, and the file
// holds exactly the wallet's stakes.
func TestExportThroughTheRunner(t *testing.T) {
	s := start(t, options{})
	seed(t, s)
	c := s.createExport(t, wallet, body("if-stake-records", sub1, main))
	if !strings.HasPrefix(c.RequestID, "export-") || (c.Status != "pending" && c.Status != "running") {
		t.Fatalf("created %+v", c)
	}
	r := s.waitStatus(t, wallet, c.RequestID, "ready")
	if r.RecordCount == nil || *r.RecordCount != 2 || r.CompletedAt == nil || r.ErrorReason != nil || r.DownloadURL == nil ||
		r.FileType != "if-stake-records" || r.Market != nil || !slices.Equal(r.UserPublicKeys, []string{sub1, main}) ||
		r.From != at("2026-11-01T00:00:00Z") || r.CreatedAt < time.Now().Unix()-60 {
		t.Fatalf("ready record %+v", r)
	}
	u, err := url.Parse(*r.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	if exp, _ := strconv.ParseInt(u.Query().Get("expires"), 10, 64); exp != *r.CompletedAt+8*3600 {
		t.Errorf("the URL expires at %d, want 8 hours after the file was stored (%d)", exp, *r.CompletedAt+8*3600)
	}
	rows, err := csv.NewReader(strings.NewReader(string(download(t, *r.DownloadURL)))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("file: %v, %d rows", err, len(rows))
	}
	col := slices.Index(rows[0], "userAuthority")
	for _, row := range rows[1:] {
		if row[col] != wallet {
			t.Errorf("a stake of %s in the wallet's file", row[col])
		}
	}

	// One market of them: USDC's stake only. An unknown market: the job fails saying so.
	usdc := s.createExport(t, wallet, strings.Replace(body("if-stake-records", main), "}", `,"market":"USDC"}`, 1))
	if r := s.waitStatus(t, wallet, usdc.RequestID, "ready"); *r.RecordCount != 1 || *r.Market != "USDC" {
		t.Errorf("USDC export %+v", r)
	}
	doge := s.createExport(t, wallet, strings.Replace(body("if-stake-records", main), "}", `,"market":"DOGE"}`, 1))
	if r := s.waitStatus(t, wallet, doge.RequestID, "failed"); r.ErrorReason == nil || !strings.Contains(*r.ErrorReason, "market DOGE not found") ||
		r.DownloadURL != nil || r.RecordCount != nil || r.CompletedAt == nil {
		t.Errorf("DOGE export %+v", r)
	}
	// Newest first (jobs of one second by name).
	list := s.exports(t, wallet, "")
	if len(list.Records) != 3 || list.Meta.NextPage != nil {
		t.Fatalf("list %+v", list)
	}
	for i := 1; i < len(list.Records); i++ {
		a, b := list.Records[i-1], list.Records[i]
		if a.CreatedAt < b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.RequestID < b.RequestID) {
			t.Fatalf("list out of order: %+v before %+v", a, b)
		}
	}

	// Past the file's window, the job is expired and its URL gone, even before the runner deletes it.
	s.clock.Advance(8*time.Hour + time.Minute)
	for _, rec := range s.exports(t, wallet, "").Records {
		if rec.RequestID == c.RequestID && (rec.Status != "expired" || rec.DownloadURL != nil || rec.RecordCount == nil) {
			t.Errorf("after 8 hours: %+v", rec)
		}
	}
}

// TestExportRetryIsIdempotent: the same body again within a minute (keys in any order) returns the
// same job, from any replica and however many ask at once; after a minute, or with another body, it
// is a new job.
func TestExportRetryIsIdempotent(t *testing.T) {
	s := start(t, options{block: true, maxUnfinished: 50})
	seed(t, s)
	// A second replica of the service: its own instance on the same database and the same jobs.
	replica := secondReplica(t, s)
	first := s.createExport(t, wallet, body("trades", main, sub1))
	handlers := []http.Handler{s.Handler(), replica}
	var wg sync.WaitGroup
	ids := make([]string, 20)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := body("trades", main, sub1)
			if i%2 == 1 {
				b = body("trades", sub1, main)
			}
			req := httptest.NewRequest(http.MethodPost, "/authority/"+wallet+"/exports", strings.NewReader(b))
			rec := httptest.NewRecorder()
			handlers[i%2].ServeHTTP(rec, req)
			var c exportCreated
			if rec.Code == 200 && json.Unmarshal(rec.Body.Bytes(), &c) == nil {
				ids[i] = c.RequestID
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id != first.RequestID {
			t.Fatalf("retry %d got %q, want %s", i, id, first.RequestID)
		}
	}
	other := s.createExport(t, wallet, body("deposits", main, sub1))
	if other.RequestID == first.RequestID {
		t.Fatal("another body got the same job")
	}
	s.clock.Advance(61 * time.Second)
	later := s.createExport(t, wallet, body("trades", main, sub1))
	if later.RequestID == first.RequestID {
		t.Fatal("a request a minute later got the first job")
	}
	if again := s.createExport(t, wallet, body("trades", sub1, main)); again.RequestID != later.RequestID {
		t.Fatalf("the retry of the later request got %s, want %s", again.RequestID, later.RequestID)
	}
	if l := s.exports(t, wallet, ""); len(l.Records) != 3 {
		t.Fatalf("%d jobs, want 3", len(l.Records))
	}
}

// TestUnfinishedLimit: a wallet may have MaxUnfinished unfinished jobs, across replicas and however
// many requests arrive at once; one more is a 400 saying so. Other wallets are not held back.
func TestUnfinishedLimit(t *testing.T) {
	s := start(t, options{block: true, maxUnfinished: 3})
	seed(t, s)
	replica := secondReplica(t, s)
	handlers := []http.Handler{s.Handler(), replica}
	fileTypes := []string{"trades", "deposits", "rewards", "liquidations", "swap-records", "lp-records", "funding-payments", "settle-pnl-records"}
	var wg sync.WaitGroup
	codes := make([]int, len(fileTypes))
	msgs := make([]string, len(fileTypes))
	for i, ft := range fileTypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := httptest.NewRequest(http.MethodPost, "/authority/"+wallet+"/exports", strings.NewReader(body(ft, main)))
			rec := httptest.NewRecorder()
			handlers[i%2].ServeHTTP(rec, req)
			codes[i] = rec.Code
			msgs[i], _ = errorMessage(rec.Body.Bytes())
		}()
	}
	wg.Wait()
	ok := 0
	for i, code := range codes {
		switch {
		case code == 200:
			ok++
		case code != 400 || msgs[i] != "wallet "+wallet+" has 3 unfinished exports, the most it may have: wait until one is ready or failed":
			t.Errorf("request %d: %d %q", i, code, msgs[i])
		}
	}
	if ok != 3 {
		t.Fatalf("%d of %d requests made a job, want 3", ok, len(fileTypes))
	}
	if jobs, _ := s.runner.List(context.Background(), wallet); len(jobs) != 3 {
		t.Fatalf("%d jobs", len(jobs))
	}
	// A retry of a queued request still answers its job; another wallet has room.
	s.createExport(t, builder, body("trades", builderAcct))
}

// secondReplica builds the service once more on the stack's database and jobs, as a second replica,
// and returns its public handler.
func secondReplica(t *testing.T, s *stack) http.Handler {
	t.Helper()
	inst, err := kit.Start(context.Background(), service.Service(service.Config{
		MaxUnfinishedExports: s.maxUnfinished, Exports: &service.Exports{Jobs: s.runner, Files: s.files}, Clock: s.clock.Now,
	}), kit.Runtime{Pool: s.Pool, Kafka: s.Kafka, PageKey: kittest.PageKey, Now: func() time.Time { return now }}, kit.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return inst.Handler()
}
