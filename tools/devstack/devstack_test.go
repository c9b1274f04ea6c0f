package devstack_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/tools/devstack"
)

// TestMakeRunServesTheMesh runs what `make run` runs, with one day of history, and reads through
// the edge router until the backfill shows up, then checks live data keeps coming.
func TestMakeRunServesTheMesh(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Postgres, a broker, the services and the simulator")
	}
	// PostgreSQL runs as the postgres user, who must be able to reach the data dir.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	stack := make(chan devstack.Exports, 1)
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, devstack.Options{
			DataDir: dir, Addr: "127.0.0.1:0", BackfillDays: 1, LiveRate: 50,
			Progress: io.Discard, Out: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: ready,
			Exports: stack,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("devstack stopped with: %v", err)
		}
	}()
	var base string
	select {
	case base = <-ready:
	case err := <-done:
		done <- nil // for the deferred wait
		t.Fatalf("devstack failed to start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("devstack did not start")
	}

	type fills struct {
		Records []struct {
			Ts     int64  `json:"ts"`
			Symbol string `json:"symbol"`
			Taker  string `json:"taker"`
		} `json:"records"`
	}
	var taker, firstTaker string
	newest := func() (int64, bool) {
		resp, err := http.Get(base + "/market/SOL-PERP/trades?limit=1")
		if err != nil {
			t.Fatalf("GET trades: %v", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound { // the market is not known until its first fill
			return 0, false
		}
		var f fills
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&f) != nil || len(f.Records) == 0 {
			return 0, false
		}
		if f.Records[0].Symbol != "SOL-PERP" {
			t.Fatalf("record of %s", f.Records[0].Symbol)
		}
		taker = f.Records[0].Taker
		return f.Records[0].Ts, true
	}
	deadline := time.Now().Add(3 * time.Minute)
	var first int64
	for {
		if ts, ok := newest(); ok && ts > time.Now().Add(-10*time.Minute).Unix() {
			first, firstTaker = ts, taker
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no recent SOL-PERP trade through the edge router")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Live: a newer trade arrives.
	for {
		if ts, ok := newest(); ok && ts > first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the live simulator produced no newer trade")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range []string{"/openapi.json", "/market/SOL-PERP/candles/60?limit=24", "/market/USDC/deposits"} {
		resp, err := http.Get(base + p)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", p, err, resp.Status)
		}
		resp.Body.Close()
	}
	// The User tag, on the same edge: the account of the trade seen above has it among its trades.
	eventually(t, deadline, "the taker's trades through the user service", func() bool {
		var f fills
		resp, err := http.Get(base + "/user/" + firstTaker + "/trades")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&f) != nil {
			return false
		}
		for _, r := range f.Records {
			if r.Ts == first && r.Taker == firstTaker {
				return true
			}
		}
		return false
	})
	for _, p := range []string{"/user/" + firstTaker + "/orders/perp", "/user/" + firstTaker + "/snapshots/trading?days=1",
		"/user/" + firstTaker + "/positions"} {
		resp, err := http.Get(base + p)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %v %v", p, err, resp.Status)
		}
		resp.Body.Close()
	}
	resp, err := http.Get(base + "/nowhere")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nowhere: %v %v", err, resp.Status)
	}
	resp.Body.Close()

	exportThroughRunner(t, <-stack, base, firstTaker, first)
	notificationsThroughTheEdge(t, base, firstTaker, first, deadline)
}

// eventually polls cond until it holds, or fails the test at deadline.
func eventually(t *testing.T, deadline time.Time, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exportThroughRunner exports the last hour of account's SOL-PERP trades with the dev stack's export
// runner (the operator's state machine on a local folder) and downloads the file through the edge.
func exportThroughRunner(t *testing.T, ex devstack.Exports, base, account string, until int64) {
	t.Helper()
	jobs := ex.Jobs
	market := "SOL-PERP"
	job, err := jobs.Create(context.Background(), "", v1alpha1.ExportJobSpec{
		Authority: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin", FileType: "market-trades",
		From: until - 3600, To: until, Market: &market,
		UserPublicKeys: []v1alpha1.PublicKey{v1alpha1.PublicKey(account)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ready v1alpha1.ExportJob
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := jobs.List(context.Background(), string(job.Spec.Authority))
		if err != nil || len(list) != 1 {
			t.Fatalf("List = %v, %v", list, err)
		}
		if list[0].Status.Phase == v1alpha1.PhaseReady {
			ready = list[0]
			break
		}
		if list[0].Status.Phase.Finished() || time.Now().After(deadline) {
			t.Fatalf("export ended %s: %+v", list[0].Status.Phase, list[0].Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if ready.Status.RecordCount == 0 {
		t.Fatal("the export of an hour of SOL-PERP trades is empty")
	}
	u, err := export.DownloadURL(context.Background(), ex.Files, &ready)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, base+"/downloads/") {
		t.Fatalf("download URL %s is not served by the edge at %s", u, base)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d, %v", resp.StatusCode, err)
	}
	if int64(len(rows)-1) != ready.Status.RecordCount || rows[0][0] != "ts" {
		t.Fatalf("downloaded %d rows with header %v, want %d records", len(rows)-1, rows[0], ready.Status.RecordCount)
	}
}
