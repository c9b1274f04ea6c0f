package devstack_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/telemetry"
	"github.com/tidemark/tidemark/services/authority"
	"github.com/tidemark/tidemark/tools/devstack"
	"github.com/tidemark/tidemark/tools/sim"
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
	registry := telemetry.NewRegistry()
	ready := make(chan string, 1)
	stack := make(chan devstack.Exports, 1)
	done := make(chan error, 1)
	go func() {
		done <- devstack.Run(ctx, devstack.Options{
			DataDir: dir, Addr: "127.0.0.1:0", BackfillDays: 1, LiveRate: 50,
			Progress: io.Discard, Out: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: ready,
			Exports: stack, Registry: registry,
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
	// The backfill goes through the simulated chain, the indexer and every consumer before the first
	// recent trade shows. How long that takes depends on what else the machine runs, so the test waits
	// on the mesh's own progress, not a clock: the checks below start once it has caught up.
	waitCaughtUp(t, registry, 15*time.Minute)
	deadline := time.Now().Add(2 * time.Minute)
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
	deadline = time.Now().Add(2 * time.Minute)
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
	// The other services consume the same backfill at their own pace (user's writes are the
	// heaviest): they get their own time to show it.
	deadline = time.Now().Add(4 * time.Minute)
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
	// The Transactions tag, on the same edge: a deposit for the taker's account, built from what the
	// simulated chain serves of it (not simulated: the chain does not run the program anyway).
	txBody := fmt.Sprintf(`{"accountId":%q,"amount":"10","symbol":"USDC","simulate":false}`, firstTaker)
	resp, err := http.Post(base+"/tx/deposit", "application/json", strings.NewReader(txBody))
	if err != nil {
		t.Fatal(err)
	}
	var built struct {
		Success bool   `json:"success"`
		Tx      string `json:"tx"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &built) != nil || !built.Success || built.Tx == "" {
		t.Fatalf("POST /tx/deposit for %s: %s %s", firstTaker, resp.Status, b)
	}
	// getBody is the body of a 200 to GET path, nil for any other answer.
	getBody := func(path string) []byte {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil
		}
		return b
	}
	// The Stats tag and the public reads, live: SOL-PERP's 24-hour volume, a volume leaderboard, the
	// parameter blob, the vaults and the aggregator's contracts.
	for path, has := range map[string]string{
		"/stats/markets": `"symbol":"SOL-PERP"`, "/stats/leaderboard?sort=volume&limit=5": `"rank":1,`,
		"/params": `"params":{`, "/vaults": `"vault":`, "/external/aggregator/contracts": `"ticker_id":"SOL-PERP"`,
		"/stats/fundingRates": `"24h":"`, "/stats/USDC/rateHistory/deposit": `"rates":[[`,
		"/stats/markets/prices": `"priceChangePercent":`, "/stats/markets/volume/24h": `"quoteVolume":"`,
		"/stats/liquidations": `"liquidationType":`, "/stats/bankruptcies": `"socialLoss":`,
		"/stats/insuranceFundSwaps": `"amountIn":`, "/stats/vaults": `"totalShares":`, "/stats/insuranceFund": `"recentFlows":[{`,
		fmt.Sprintf("/stats/markets/volume?startTs=%d&endTs=%d", time.Now().Unix()-2*3600, time.Now().Unix()): `"quoteVolume":"`,
	} {
		eventually(t, deadline, path+" with live data", func() bool {
			return strings.Contains(string(getBody(path)), has)
		})
	}

	// The wallet at the top of the month's volume leaderboard ranks first by volume on its own route
	// (both read again until they agree: live fills may change the leader between the two).
	eventually(t, deadline, "the volume leader's own rank", func() bool {
		var top struct {
			Records []struct {
				Authority string `json:"authority"`
			} `json:"records"`
		}
		if json.Unmarshal(getBody("/stats/leaderboard?sort=volume&limit=1"), &top) != nil || len(top.Records) != 1 {
			return false
		}
		return strings.Contains(string(getBody("/stats/leaderboard/"+top.Records[0].Authority)), `"volume":1,`)
	})

	resp, err = http.Get(base + "/nowhere")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nowhere: %v %v", err, resp.Status)
	}
	resp.Body.Close()

	// The live checks wait on the simulator's next events, not on the backfill: each has time of its
	// own, however long the reads above took on a busy machine.
	liveCandlesThroughRouter(t, base, time.Now().Add(time.Minute), edgePath(registry))
	liveChannelsThroughRouter(t, base, time.Now().Add(time.Minute), edgePath(registry))
	exportEveryFileType(t, <-stack, base, firstTaker, first)
	notificationsThroughTheEdge(t, base, firstTaker, first, time.Now().Add(time.Minute))
	chainPruned(t, registry, time.Now().Add(2*time.Minute))
}

// chainPruned waits until the simulated chain has let go of the blocks the indexer read: it keeps
// an hour of them behind the indexer's checkpoint, not the day of backfill.
func chainPruned(t *testing.T, registry *prometheus.Registry, deadline time.Time) {
	t.Helper()
	keep := float64(time.Hour / sim.SlotInterval)
	var first, tip float64
	for {
		first = kittest.Metric(t, registry, "tidemark_devstack_chain_first_slot", nil)
		tip = kittest.Metric(t, registry, "tidemark_indexer_tip_slot", nil)
		if first > 0 && tip-first <= 2*keep {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the chain keeps its blocks from slot %.0f, %.0f slots behind the tip; an hour is %.0f", first, tip-first, keep)
		}
		time.Sleep(time.Second)
	}
}

// edgePath says where the messages of the WebSocket edge stand on their way, from the stack's
// metrics: what the producers' outboxes published and what the edge applied, dropped or rejected by
// topic (a counter or a gauge, whichever the metric is). A live check that times out names it, so that a failure says which stage stopped.
func edgePath(registry *prometheus.Registry) func() string {
	return func() string {
		families, err := registry.Gather()
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, f := range families {
			name := f.GetName()
			if !strings.Contains(name, "outbox_") && !strings.Contains(name, "ws_edge_") {
				continue
			}
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(labels, ","), m.GetCounter().GetValue()+m.GetGauge().GetValue()))
			}
		}
		return strings.Join(out, "\n")
	}
}

// waitCaughtUp waits until the indexer's checkpoint is within its ready lag of the chain's tip and
// every consumer of the stack has consumed all but a few batches of what the indexer wrote to each
// of its topics, as the stack's metrics count them, or fails after most with where each stage
// stands. (The consumers' lag gauges cannot say it: a message's high watermark is the one of the
// fetch that brought it, which trails a topic the indexer is filling.)
func waitCaughtUp(t *testing.T, registry *prometheus.Registry, most time.Duration) {
	t.Helper()
	const readyLag, behind = 150, 2000
	deadline := time.Now().Add(most)
	for {
		tip := kittest.Metric(t, registry, "tidemark_indexer_tip_slot", nil)
		slotLag := kittest.Metric(t, registry, "tidemark_indexer_slot_lag", nil)
		written, err := telemetry.SumBy(registry, "tidemark_indexer_events_total", "topic", nil)
		if err != nil {
			t.Fatal(err)
		}
		caught := tip > 0 && slotLag <= readyLag && written[events.TopicFills] > 0
		var late []string
		for topic, n := range written {
			consumed, err := telemetry.SumBy(registry, "tidemark_ingest_messages_total", "service", map[string]string{"topic": topic})
			if err != nil {
				t.Fatal(err)
			}
			if topic == events.TopicFills && (consumed["market"] == 0 || consumed["user"] == 0) {
				caught = false
			}
			for service, c := range consumed {
				if c < n-behind {
					caught = false
					late = append(late, fmt.Sprintf("%s %s %.0f of %.0f", service, topic, c, n))
				}
			}
		}
		if caught {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mesh did not catch up with the backfill in %v: indexer tip %.0f, %.0f slots behind; consumers behind: %v",
				most, tip, slotLag, late)
		}
		time.Sleep(time.Second)
	}
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

// exportEveryFileType requests, through the Authority API on the edge, an export of every file type
// for the wallet of account over the last day (market-scoped ones of SOL-PERP), waits until every job
// is ready, and downloads each file through the edge: every row is the wallet's (or the market's) and
// inside the range, and the trades are not empty. kubectl's view of the jobs is the runner's.
func exportEveryFileType(t *testing.T, ex devstack.Exports, base, account string, until int64) {
	t.Helper()
	var wallet string
	var keys []string
	for _, a := range sim.New(sim.DefaultConfig()).Accounts() { // the dev stack's seed
		if a.User == account {
			wallet = a.Authority
		}
	}
	for _, a := range sim.New(sim.DefaultConfig()).Accounts() {
		if a.Authority == wallet {
			keys = append(keys, a.User)
		}
	}
	if wallet == "" {
		t.Fatalf("account %s is no simulated account", account)
	}
	// The Authority tag on the same edge: the wallet's accounts, as protocol.new-users told them.
	resp, err := http.Get(base + "/authority/" + wallet + "/accounts")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Accounts []struct {
			AccountID string `json:"accountId"`
		} `json:"accounts"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Accounts) != len(keys) {
		t.Fatalf("accounts of %s: %v %+v, want %v", wallet, err, list, keys)
	}
	from := until - 86400
	requests := map[string]string{} // requestId -> file type
	for _, ft := range v1alpha1.FileTypes {
		market := ""
		if ft == "market-trades" || ft == "funding-rates" {
			market = `,"market":"SOL-PERP"`
		}
		body := fmt.Sprintf(`{"fileType":%q,"from":%d,"to":%d,"userPublicKeys":["%s"]%s}`, ft, from, until, strings.Join(keys, `","`), market)
		resp, err := http.Post(base+"/authority/"+wallet+"/exports", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var created struct {
			RequestID string `json:"requestId"`
			Status    string `json:"status"`
		}
		err = json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || created.RequestID == "" {
			t.Fatalf("POST %s: %d %v %+v", body, resp.StatusCode, err, created)
		}
		requests[created.RequestID] = string(ft)
		// The wallet may have 5 unfinished jobs: wait for room before the next.
		waitExports(t, base, wallet, func(recs []authority.Record) bool {
			unfinished := 0
			for _, r := range recs {
				if r.Status == "pending" || r.Status == "running" {
					unfinished++
				}
			}
			return unfinished < 5
		})
	}
	var ready []authority.Record
	waitExports(t, base, wallet, func(recs []authority.Record) bool {
		ready = ready[:0]
		for _, r := range recs {
			if requests[r.RequestID] == "" {
				continue
			}
			if r.Status == "failed" {
				t.Fatalf("%s export failed: %s", r.FileType, *r.ErrorReason)
			}
			if r.Status == "ready" {
				ready = append(ready, r)
			}
		}
		return len(ready) == len(requests)
	})
	inWallet := func(k string) bool { return slices.Contains(keys, k) }
	for _, r := range ready {
		if r.DownloadURL == nil || !strings.HasPrefix(*r.DownloadURL, base+"/downloads/") {
			t.Fatalf("%s: download URL %v is not served by the edge at %s", r.FileType, r.DownloadURL, base)
		}
		resp, err := http.Get(*r.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(resp.Body).ReadAll()
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(rows) == 0 || rows[0][0] != "ts" {
			t.Fatalf("%s: download %d, %v", r.FileType, resp.StatusCode, err)
		}
		if int64(len(rows)-1) != *r.RecordCount {
			t.Fatalf("%s: %d rows, recordCount %d", r.FileType, len(rows)-1, *r.RecordCount)
		}
		col := func(name string) int { return slices.Index(rows[0], name) }
		for _, row := range rows[1:] {
			ts, _ := strconv.ParseInt(row[col("ts")], 10, 64)
			var mine bool
			switch r.FileType {
			case "market-trades":
				mine = (inWallet(row[col("taker")]) || inWallet(row[col("maker")])) && row[col("symbol")] == "SOL-PERP"
			case "funding-rates":
				mine = row[col("symbol")] == "SOL-PERP"
			case "if-stake-records":
				mine = row[col("userAuthority")] == wallet
			default:
				mine = inWallet(row[col("user")])
			}
			if !mine || ts < from || ts > until {
				t.Fatalf("%s: a row of someone else or outside [%d, %d]: %v", r.FileType, from, until, row)
			}
		}
		if (r.FileType == "trades" || r.FileType == "market-trades" || r.FileType == "funding-rates") && *r.RecordCount == 0 {
			t.Errorf("%s: the export of a day is empty", r.FileType)
		}
	}
	jobs, err := ex.Jobs.List(context.Background(), wallet)
	if err != nil || len(jobs) != len(requests) {
		t.Fatalf("the runner holds %d jobs of the wallet (%v), the API made %d", len(jobs), err, len(requests))
	}
	for _, j := range jobs {
		if requests[j.Name] == "" || j.Status.Phase != v1alpha1.PhaseReady {
			t.Errorf("runner job %s %s is not one of the API's ready jobs", j.Name, j.Status.Phase)
		}
	}
}

// waitExports polls the wallet's export list until cond holds of its records.
func waitExports(t *testing.T, base, wallet string, cond func([]authority.Record) bool) {
	t.Helper()
	eventually(t, time.Now().Add(2*time.Minute), "the wallet's exports", func() bool {
		resp, err := http.Get(base + "/authority/" + wallet + "/exports")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct {
			Records []authority.Record `json:"records"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&page) != nil {
			t.Fatalf("GET exports: %d", resp.StatusCode)
		}
		return cond(page.Records)
	})
}
