package kit_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kafka/kafkatest"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/platform/pg/pgtest"
	"github.com/tidemark/tidemark/platform/series"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// toy is a whole service in one declaration: it stores the deposits of protocol.deposits by account
// and serves them as a series with its rolling, dated, CSV and export routes.
func toy(name string) kit.Service {
	return kit.Service{
		Name:     name,
		Prefixes: []string{"/" + name + "/"},
		Migrations: fstest.MapFS{"001_deposits.sql": {Data: []byte(`
CREATE TABLE deposits (
	ts bigint NOT NULL, tx_sig text NOT NULL, tx_sig_index int NOT NULL, account text NOT NULL, record json NOT NULL,
	PRIMARY KEY (account, ts, tx_sig, tx_sig_index)
) PARTITION BY RANGE (ts);`)}},
		Build: func(d kit.Deps) (kit.Parts, error) {
			table := ingest.Table[ingest.Event[*events.Deposit]]{
				Name:    d.Schema + ".deposits",
				Columns: []string{"ts", "tx_sig", "tx_sig_index", "account", "record"},
				Key:     []string{"account", "ts", "tx_sig", "tx_sig_index"},
				Row: func(e ingest.Event[*events.Deposit]) []any {
					return []any{e.Record.Ts, e.Record.TxSig, e.Record.TxSigIndex, e.Record.User, e.JSON}
				},
			}
			return kit.Parts{
				Sinks: []ingest.Sink{ingest.Records(events.TopicDeposits, func(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.Deposit]) error {
					_, err := table.Insert(ctx, tx, evs)
					return err
				})},
				Series: []series.Series{{
					Name: "deposits", Table: "deposits", Path: "/" + name + "/{account}/deposits",
					Dated: "/" + name + "/{account}/deposits/{year}/{month}", Where: []string{"account = @account"},
					Record: series.LayoutOf[events.Deposit](),
					Export: &series.Export{FileType: "deposits", Accounts: "account = ANY(@accounts)"},
				}},
				Internal: func(api *httpapi.API) {
					api.Handle(http.MethodGet, kit.InternalPrefix+name+"/count", func(r *http.Request) (any, error) {
						var n int
						err := d.Pool.QueryRow(r.Context(), "SELECT count(*) FROM "+d.Schema+".deposits").Scan(&n)
						return map[string]int{"deposits": n}, err
					})
				},
			}, nil
		},
	}
}

// TestAServiceIsItsDeclaration: from one series declaration a service gets its rolling route (newest
// first, paged by token), its dated route (JSON and CSV) and its export stream, fed by its sink.
func TestAServiceIsItsDeclaration(t *testing.T) {
	s := kittest.Start(t, pgtest.Server(), kittest.Options{}, toy("toy"))
	day := kittest.At("2026-11-18T10:00:00Z")
	var recs []events.Record
	for i := range 30 {
		d := kittest.Deposit(kittest.USDC, day+int64(i)*60, i+1, false)
		if i%5 == 0 {
			d.User = kittest.Key(7) // another account's
		}
		recs = append(recs, d)
	}
	s.Ingest(t, kittest.Encode(t, events.TopicDeposits, recs...)...)
	account := kittest.Key(6)

	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec
	}
	type page struct {
		Records []events.Deposit `json:"records"`
		Meta    struct {
			NextPage     any `json:"nextPage"`
			TotalRecords int `json:"totalRecords"`
		} `json:"meta"`
	}
	// Rolling: 20 newest first, then the rest.
	var first, second page
	if err := json.Unmarshal(get("/toy/"+account+"/deposits").Body.Bytes(), &first); err != nil {
		t.Fatal(err)
	}
	tok, _ := first.Meta.NextPage.(string)
	if len(first.Records) != 20 || tok == "" || first.Records[0].DepositRecordID != "30" {
		t.Fatalf("first page: %d records, next %v", len(first.Records), first.Meta.NextPage)
	}
	if err := json.Unmarshal(get("/toy/"+account+"/deposits?page="+tok).Body.Bytes(), &second); err != nil {
		t.Fatal(err)
	}
	if len(second.Records) != 4 || second.Meta.NextPage != nil || second.Records[3].DepositRecordID != "2" {
		t.Fatalf("second page: %+v", second)
	}
	// A token is bound to its scope.
	other := httptest.NewRecorder()
	s.Handler().ServeHTTP(other, httptest.NewRequest(http.MethodGet, "/toy/"+kittest.Key(7)+"/deposits?page="+tok, nil))
	if other.Code != http.StatusBadRequest {
		t.Fatalf("token of another account: %d", other.Code)
	}
	// Dated, JSON and CSV.
	var dated page
	if err := json.Unmarshal(get("/toy/"+account+"/deposits/2026/11").Body.Bytes(), &dated); err != nil {
		t.Fatal(err)
	}
	if dated.Meta.TotalRecords != 24 || len(dated.Records) != 20 || dated.Records[0].DepositRecordID != "2" {
		t.Fatalf("dated: %+v", dated.Meta)
	}
	rec := get("/toy/" + account + "/deposits/2026/11?format=csv")
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil || len(rows) != 21 || rows[0][0] != "ts" {
		t.Fatalf("dated CSV: %d rows, %v", len(rows), err)
	}
	if cd := rec.Header().Get("Content-Disposition"); cd != `attachment; filename="toy-`+account+`-deposits-2026-11.csv"` {
		t.Fatalf("Content-Disposition %q", cd)
	}
	// The export stream: the accounts' records of the range, with the record count.
	srv := s.InternalServer(t, "toy")
	resp, err := http.Get(fmt.Sprintf("%s%sdeposits?from=%d&to=%d&accounts=%s,%s", srv.URL, exportstream.PathPrefix, day, day+600, account, kittest.Key(7)))
	if err != nil {
		t.Fatal(err)
	}
	body := kittest.ReadAll(t, resp.Body)
	resp.Body.Close()
	rows, err = csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil || resp.StatusCode != 200 || len(rows) != 12 || resp.Trailer.Get(exportstream.RecordCountTrailer) != "11" {
		t.Fatalf("export: %d, %d rows, trailer %q, %v", resp.StatusCode, len(rows), resp.Trailer.Get(exportstream.RecordCountTrailer), err)
	}
	// Its own internal route answers on the internal port only.
	resp, err = http.Get(srv.URL + kit.InternalPrefix + "toy/count")
	if err != nil {
		t.Fatal(err)
	}
	body = kittest.ReadAll(t, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"deposits":30`) {
		t.Fatalf("internal route: %d %s", resp.StatusCode, body)
	}
	pub := httptest.NewRecorder()
	s.Handler().ServeHTTP(pub, httptest.NewRequest(http.MethodGet, kit.InternalPrefix+"toy/count", nil))
	if pub.Code != http.StatusNotFound {
		t.Fatalf("internal route on the public port: %d", pub.Code)
	}
}

// TestTwoServicesInOneProcess: as in the dev stack, two services share one registry and one logger;
// their metrics are told apart by the service label and every log line names its service once.
func TestTwoServicesInOneProcess(t *testing.T) {
	var logs kittest.Logs
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	s := kittest.Start(t, pgtest.Server(), kittest.Options{Logger: logger}, toy("a"), toy("b"))
	s.Ingest(t, kittest.Encode(t, events.TopicDeposits, kittest.Deposit(kittest.USDC, kittest.At("2026-11-18T10:00:00Z"), 1, false))...)
	for _, name := range []string{"a", "b"} {
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/"+name+"/"+kittest.Key(6)+"/deposits", nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"depositRecordId":"1"`) {
			t.Fatalf("%s: %d %s", name, rec.Code, rec.Body)
		}
	}
	mfs, err := s.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if v := metricValue(mfs, "tidemark_ingest_messages_total", map[string]string{"service": name, "topic": events.TopicDeposits}); v != 1 {
			t.Errorf("service %s counted %v messages, want 1", name, v)
		}
		if v := metricValue(mfs, "tidemark_http_request_seconds", map[string]string{"service": name, "code": "200"}); v != 1 {
			t.Errorf("service %s observed %v requests, want 1", name, v)
		}
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("%d log lines", len(lines))
	}
	for _, l := range lines {
		if n := strings.Count(l, `"service":`); n != 1 {
			t.Errorf("%d service keys in %s", n, l)
		}
	}
}

func metricValue(mfs []*dto.MetricFamily, name string, labels map[string]string) float64 {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

// TestBadConfigurationStopsTheStart: a value that does not parse or is out of range stops the
// service before it opens anything, with the variable's name.
func TestBadConfigurationStopsTheStart(t *testing.T) {
	good := map[string]string{
		"TIDEMARK_PG_URL": "postgres://nobody@127.0.0.1:1/x", "TIDEMARK_KAFKA_BROKERS": "127.0.0.1:1",
		"TIDEMARK_PAGE_KEY": strings.Repeat("k", 32),
	}
	tests := []struct {
		vars map[string]string
		want []string
	}{
		{map[string]string{"TIDEMARK_INGEST_WRITERS": "lots"}, []string{`TIDEMARK_INGEST_WRITERS="lots": want an integer`}},
		{map[string]string{"TIDEMARK_INGEST_WRITERS": "0"}, []string{"TIDEMARK_INGEST_WRITERS must be 1..16, got 0"}},
		{map[string]string{"TIDEMARK_INGEST_BATCH_WAIT": "soon"}, []string{"TIDEMARK_INGEST_BATCH_WAIT"}},
		{map[string]string{"TIDEMARK_PG_POOL_SIZE": "4", "TIDEMARK_INGEST_WRITERS": "8"}, []string{"TIDEMARK_PG_POOL_SIZE 4 leaves too few"}},
		{map[string]string{"TIDEMARK_EXPORT_CONCURRENCY": "1000", "TIDEMARK_OUTBOX_BATCH_SIZE": "-1"},
			[]string{"TIDEMARK_EXPORT_CONCURRENCY must be 1..64", "TIDEMARK_OUTBOX_BATCH_SIZE must be 1..10000"}},
		{map[string]string{"TIDEMARK_PG_URL": "", "TIDEMARK_KAFKA_BROKERS": ""}, []string{"TIDEMARK_PG_URL is required", "TIDEMARK_KAFKA_BROKERS is required"}},
		{map[string]string{"TIDEMARK_KAFKA_SASL_MECHANISM": "GSSAPI", "TIDEMARK_KAFKA_TLS_CERT_FILE": "/x.crt"},
			[]string{"TIDEMARK_KAFKA_SASL_MECHANISM \"GSSAPI\" must be one of", "TIDEMARK_KAFKA_TLS_KEY_FILE"}},
	}
	for _, tt := range tests {
		vars := map[string]string{}
		for k, v := range good {
			vars[k] = v
		}
		for k, v := range tt.vars {
			vars[k] = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := kit.Run(ctx, toy("toy"), kittest.Env(vars))
		cancel()
		if err == nil {
			t.Fatalf("%v: started", tt.vars)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %v, want %q", tt.vars, err, w)
			}
		}
		if strings.Contains(err.Error(), "ping") {
			t.Errorf("%v: it tried to connect: %v", tt.vars, err)
		}
	}
	names := map[string]bool{}
	for _, v := range kit.Variables(toy("toy")) {
		names[v.Name] = true
	}
	for _, n := range []string{"TIDEMARK_PG_URL", "TIDEMARK_PG_POOL_SIZE", "TIDEMARK_INGEST_WRITERS", "TIDEMARK_INGEST_BATCH_SIZE",
		"TIDEMARK_OUTBOX_BATCH_SIZE", "TIDEMARK_EXPORT_CONCURRENCY", "TIDEMARK_PAGE_KEY", "TIDEMARK_PUBLIC_ADDR"} {
		if !names[n] {
			t.Errorf("Variables lacks %s", n)
		}
	}
}

// TestKafkaThatRefusesStopsTheStart: credentials or a certificate the brokers refuse stop the start-up
// with the variables to fix, before the service would retry them for ever.
func TestKafkaThatRefusesStopsTheStart(t *testing.T) {
	b := kafkatest.Start(t, kafkatest.Options{Mechanism: kafka.SASLScramSHA256, User: "toy", Password: "right"})
	vars := map[string]string{
		"TIDEMARK_PG_URL": pgtest.NewDB(t, pgtest.Server()), "TIDEMARK_KAFKA_BROKERS": strings.Join(b.Brokers(), ","),
		"TIDEMARK_PAGE_KEY": strings.Repeat("k", 32), "TIDEMARK_PUBLIC_ADDR": "127.0.0.1:0", "TIDEMARK_INTERNAL_ADDR": "127.0.0.1:0",
		"TIDEMARK_KAFKA_TLS_CA_FILE": b.Security.CAFile, "TIDEMARK_KAFKA_SASL_MECHANISM": kafka.SASLScramSHA256,
		"TIDEMARK_KAFKA_SASL_USERNAME": "toy", "TIDEMARK_KAFKA_SASL_PASSWORD": "wrong",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := kit.Run(ctx, toy("toy"), kittest.Env(vars))
	if err == nil || !strings.Contains(err.Error(), "TIDEMARK_KAFKA_SASL_PASSWORD") {
		t.Fatalf("started against a broker that refuses its password: %v", err)
	}
}

// TestLoadConfigurationWithOnlyTheRequiredVariables: a deployed service is configured by its
// environment alone; what it leaves unset takes the defaults, the outbox's backoff included.
func TestLoadConfigurationWithOnlyTheRequiredVariables(t *testing.T) {
	env := kittest.Env(map[string]string{
		"TIDEMARK_PG_URL": "postgres://localhost/db", "TIDEMARK_KAFKA_BROKERS": "localhost:9092",
		"TIDEMARK_PAGE_KEY": string(kittest.PageKey),
	})
	svc := kit.Service{Name: "publisher", Publishes: []string{"edge.things"}, Build: func(kit.Deps) (kit.Parts, error) { return kit.Parts{}, nil }}
	if _, err := kit.LoadConfiguration(env, svc); err != nil {
		t.Fatalf("LoadConfiguration: %v", err)
	}
}

// TestJobsRunWithTheService: a service's jobs run while it runs and stop with it; a failing job stops
// the service with its error.
func TestJobsRunWithTheService(t *testing.T) {
	started, stopped := make(chan struct{}, 2), make(chan struct{}, 2)
	svc := toy("jobs")
	build := svc.Build
	svc.Build = func(d kit.Deps) (kit.Parts, error) {
		parts, err := build(d)
		parts.Jobs = []kit.Job{{Name: "upkeep", Run: func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			stopped <- struct{}{}
			return nil
		}}}
		return parts, err
	}
	s := kittest.Start(t, pgtest.Server(), kittest.Options{}, svc)
	awaitJob := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the job did not %s", what)
		}
	}
	awaitJob(started, "start")
	s.Restart(t, "jobs", false) // stops the instance, and with it its job, then starts both again
	select {
	case <-stopped:
	default:
		t.Fatal("the job outlived its service")
	}
	awaitJob(started, "start again")

	failing := toy("failing")
	build2 := failing.Build
	failing.Build = func(d kit.Deps) (kit.Parts, error) {
		parts, err := build2(d)
		parts.Jobs = []kit.Job{{Name: "sweep", Run: func(context.Context) error { return fmt.Errorf("table gone") }}}
		return parts, err
	}
	inst, err := kit.Start(context.Background(), failing, kit.Runtime{Pool: s.Pool, Kafka: s.Kafka}, kit.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := inst.Run(ctx); err == nil || !strings.Contains(err.Error(), "failing sweep: table gone") {
		t.Fatalf("Run = %v, want the job's error", err)
	}
}

// TestDeclaredPartitions: a table the service declares daily with a retention gets daily partitions
// from now-retention to a week ahead, and loses older ones at start-up (the upkeep does the same
// every few hours); the service's other tables keep monthly partitions from the archive's start.
func TestDeclaredPartitions(t *testing.T) {
	ctx := context.Background()
	migrations := fstest.MapFS{"001.sql": {Data: []byte(`
CREATE TABLE states (ts bigint NOT NULL, v int) PARTITION BY RANGE (ts);
CREATE TABLE events (ts bigint NOT NULL, v int) PARTITION BY RANGE (ts);`)}}
	svc := func(decl ...kit.Partitioning) kit.Service {
		return kit.Service{Name: "parts", Migrations: migrations, Build: func(kit.Deps) (kit.Parts, error) {
			return kit.Parts{Partitions: decl}, nil
		}}
	}
	daily := kit.Partitioning{Table: "states", Period: pg.Daily, Retention: 3 * 24 * time.Hour}
	now := time.Date(2026, 11, 19, 15, 30, 0, 0, time.UTC)
	s := kittest.Start(t, pgtest.Server(), kittest.Options{Now: now}, svc(daily))
	partitions := func(table string) []string {
		t.Helper()
		rows, err := s.Pool.Query(ctx, `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = $1::regclass ORDER BY 1`, table)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	want := []string{"states_p20261116", "states_p20261117", "states_p20261118", "states_p20261119", "states_p20261120",
		"states_p20261121", "states_p20261122", "states_p20261123", "states_p20261124", "states_p20261125", "states_p20261126"}
	if got := partitions("parts.states"); !slices.Equal(got, want) {
		t.Errorf("daily partitions:\n got %v\nwant %v", got, want)
	}
	if got := partitions("parts.events"); len(got) != 5*12+2 || got[0] != "events_p202201" || got[len(got)-1] != "events_p202702" {
		t.Errorf("monthly partitions: %d, %v .. %v", len(got), got[0], got[len(got)-1])
	}

	// An old day (say, from a longer retention before) is dropped at the next start.
	if err := pg.EnsurePartitions(ctx, s.Pool, "parts.states", pg.Daily, now.AddDate(0, 0, -10), now); err != nil {
		t.Fatal(err)
	}
	if _, err := kit.Start(ctx, svc(daily), kit.Runtime{Pool: s.Pool, Now: func() time.Time { return now }}, kit.Settings{}); err != nil {
		t.Fatal(err)
	}
	if got := partitions("parts.states"); !slices.Equal(got, want) {
		t.Errorf("daily partitions after a restart:\n got %v\nwant %v", got, want)
	}

	for _, bad := range []kit.Partitioning{
		{Table: "nothing", Period: pg.Daily},
		{Table: "states", Period: pg.Daily, Retention: -time.Hour},
		{Table: "states", Period: pg.Period(7)},
	} {
		if _, err := kit.Start(ctx, svc(bad), kit.Runtime{Pool: s.Pool, Now: func() time.Time { return now }}, kit.Settings{}); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

// TestJobsWakeTheOutbox: what a job's own transaction queues in its service's outbox goes out when it
// wakes the publisher, not at the next poll.
func TestJobsWakeTheOutbox(t *testing.T) {
	s := kittest.Start(t, pgtest.Server(), kittest.Options{}, toy("host"))
	const topic = "kit.woken"
	svc := toy("waker")
	svc.Publishes = []string{topic}
	build := svc.Build
	send := make(chan string)
	svc.Build = func(d kit.Deps) (kit.Parts, error) {
		p, err := build(d)
		p.Jobs = []kit.Job{{Name: "queue", Run: func(ctx context.Context) error {
			for {
				var v string
				select {
				case <-ctx.Done():
					return nil
				case v = <-send:
				}
				tx, err := d.Pool.Begin(ctx)
				if err != nil {
					return err
				}
				err = outbox.Add(ctx, tx, d.Schema, events.Message{Topic: topic, Key: []byte("k"), Value: []byte(v)})
				if err == nil {
					err = tx.Commit(ctx)
				}
				if err != nil {
					_ = tx.Rollback(ctx)
					return err
				}
				d.WakeOutbox()
			}
		}}}
		return p, err
	}
	rt := kit.Runtime{Pool: s.Pool, Kafka: s.Kafka, Now: func() time.Time { return s.Now }}
	// Without a wake-up a message waits an hour for the next poll.
	inst, err := kit.Start(context.Background(), svc, rt, kit.Settings{Outbox: outbox.Config{PollInterval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if err := kafka.EnsureTopics(context.Background(), s.Kafka.Brokers, 1, inst.Topics()...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inst.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	r := s.Kafka.NewReader("kit-woken", []string{topic})
	defer r.Close()
	// The first may leave with the publisher's drain at start; the second only when woken.
	for _, v := range []string{`{"n":1}`, `{"n":2}`} {
		send <- v
		readCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		m, err := r.FetchMessage(readCtx)
		stop()
		if err != nil {
			t.Fatalf("%s never came: %v", v, err)
		}
		if string(m.Value) != v {
			t.Fatalf("got %s, want %s", m.Value, v)
		}
	}
}

// TestStartValidatesSettings: settings given in code (the dev stack's, a test's) are checked as those
// read from the environment are, with the same messages naming the variable; zero values take the
// defaults.
func TestStartValidatesSettings(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rt := kit.Runtime{Pool: pool, Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}, PageKey: kittest.PageKey}
	for _, tc := range []struct {
		name string
		set  kit.Settings
		want string // "" for none
	}{
		{"zero values take the defaults", kit.Settings{}, ""},
		{"batch size", kit.Settings{Ingest: ingest.Config{BatchSize: ingest.MaxBatchSize + 1}}, "TIDEMARK_INGEST_BATCH_SIZE"},
		{"session timeout", kit.Settings{Ingest: ingest.Config{SessionTimeout: time.Second}}, "TIDEMARK_INGEST_SESSION_TIMEOUT"},
		{"outbox batch", kit.Settings{Outbox: outbox.Config{BatchSize: -1}}, "TIDEMARK_OUTBOX_BATCH_SIZE"},
		{"export concurrency", kit.Settings{Export: series.ExportConfig{Concurrency: 65}}, "TIDEMARK_EXPORT_CONCURRENCY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := toy("settings")
			svc.Config = &window{}
			_, err := kit.Start(context.Background(), svc, rt, tc.set)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Start: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Start = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestStartValidatesTheServiceConfig: a service's own configuration given in code takes its defaults
// and is validated before Build, as one read from the environment is.
func TestStartValidatesTheServiceConfig(t *testing.T) {
	pool := pgtest.NewPool(t, pgtest.Server())
	rt := kit.Runtime{Pool: pool, Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}, PageKey: kittest.PageKey}
	for _, tc := range []struct {
		name string
		cfg  window
		want string // "" for none
	}{
		{"zero takes the default", window{}, ""},
		{"in range", window{Window: time.Hour}, ""},
		{"out of range", window{Window: -time.Second}, "TIDEMARK_TOY_WINDOW"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			svc := toy("configured")
			svc.Config = &cfg
			var built window
			build := svc.Build
			svc.Build = func(d kit.Deps) (kit.Parts, error) {
				built = cfg
				return build(d)
			}
			_, err := kit.Start(context.Background(), svc, rt, kit.Settings{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Start: %v", err)
			case tc.want == "" && built.Window != cmp.Or(tc.cfg.Window, defaultWindow):
				t.Fatalf("Build saw %v, want %v", built.Window, cmp.Or(tc.cfg.Window, defaultWindow))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Start = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// window is a toy service's configuration.
type window struct{ Window time.Duration }

const defaultWindow = 15 * time.Minute

func (w *window) RegisterEnv(e *app.Env) { w.Window = e.Duration("TOY_WINDOW", defaultWindow) }
func (w *window) SetDefaults()           { w.Window = cmp.Or(w.Window, defaultWindow) }
func (w window) Validate() error {
	if w.Window <= 0 {
		return fmt.Errorf("%sTOY_WINDOW must be positive, got %s", app.EnvPrefix, w.Window)
	}
	return nil
}
