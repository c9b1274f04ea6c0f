package bench_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/httpapi"
	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/services/notify"
	notifysvc "github.com/tidemark/tidemark/services/notify/service"
	"github.com/tidemark/tidemark/tools/loadgen"
)

const (
	notifyWallets   = 300
	notifyPerWallet = 1000
)

var notifyProfile = flag.String("bench.notifyprofile", "", "write a CPU profile of the last round of the notifications feed (load generator included) to this file")

// benchWallet is wallet i of the notify dataset.
func benchWallet(i int) ed25519.PrivateKey {
	seed := sha256.Sum256(fmt.Appendf(nil, "bench wallet %d", i))
	return ed25519.NewKeyFromSeed(seed[:])
}

func walletAddress(k ed25519.PrivateKey) string {
	return events.EncodeBase58(k.Public().(ed25519.PublicKey))
}

// memorySignatures is the replay record of the baseline: a map in memory.
type memorySignatures struct{ seen sync.Map }

func (m *memorySignatures) UseSignature(_ context.Context, sig []byte, _, _ int64) (bool, error) {
	_, loaded := m.seen.LoadOrStore(string(sig), true)
	return !loaded, nil
}

// BenchmarkNotificationsFeed serves the first page of one wallet's feed (300 wallets with 1000
// notifications each) to 16 concurrent keep-alive connections, every request freshly signed, so every
// one verifies an ed25519 signature and records it in Postgres before reading the page, against a bare
// net/http handler that verifies the same signatures with the same verifier (its replay record a map)
// and answers the same page from memory, in the same run. Target: >= 0.5 x the bare handler's
// throughput, p99 < 10 ms.
func BenchmarkNotificationsFeed(b *testing.B) {
	for range b.N {
		pool := database(b, "bench_notify", true)
		svc := startService(b, pool, benchBroker(b), notifysvc.Service(notifysvc.Config{}), kit.Settings{}, time.Now)
		runService(b, svc)
		wallets := make([]string, notifyWallets)
		for i := range wallets {
			wallets[i] = walletAddress(benchWallet(i))
		}
		ctx := context.Background()
		t0 := time.Now()
		now := time.Now().Unix()
		// A month of notifications per wallet, a tenth of them read, the event data as fills give it.
		_, err := pool.Exec(ctx, `
			INSERT INTO notify.notifications (notification_id, authority, source, tx_sig, tx_sig_index, account, type, status,
				push, created_at, sent_at, record)
			SELECT id, auth, 'fill', 'sig' || i, 0, 'acct' || w, 'RECORD_UPDATE', status, 'skipped', ts, ts + 1,
				format('{"notificationId":"%s","authorityId":"%s","title":"Order filled","body":"Your long order #%s on SOL-PERP is filled: 1.5 at $142.10 (Main Account).","type":"RECORD_UPDATE","status":"%s","channels":["app"],"data":{"accountId":"acct%s","baseAssetAmountFilled":"1500000000","direction":"long","event":"fill","fillRecordId":"%s","marketIndex":0,"marketType":"perp","orderBaseAssetAmount":"1500000000","orderBaseAssetAmountFilled":"1500000000","orderId":"%s","quoteAssetAmountFilled":"213150000","role":"taker","symbol":"SOL-PERP","ts":%s,"txSig":"sig%s","txSigIndex":0},"actions":[{"label":"View order","link":"/user/acct%s/orders/id/%s"},{"label":"View trades","link":"/user/acct%s/trades/SOL-PERP"}],"sentAt":%s,"createdAt":%s}',
					id, auth, i, status, w, i, i, ts, i, w, i, w, ts + 1, ts)::json
			FROM (
				SELECT i, i % $2::int AS w, md5(i::text)::uuid AS id, ($1::text[])[i % $2::int + 1] AS auth,
					CASE WHEN i % 10 = 0 THEN 'READ' ELSE 'SENT' END AS status,
					$3::bigint - i::bigint * 2592000 / ($2::int * $4::int) AS ts
				FROM generate_series(1, $2::int * $4::int) AS i
			) g`, wallets, notifyWallets, now, notifyPerWallet)
		if err != nil {
			b.Fatalf("generate notifications: %v", err)
		}
		if _, err := pool.Exec(ctx, "VACUUM ANALYZE notify.notifications"); err != nil {
			b.Fatal(err)
		}
		b.Logf("generated %d notifications (%s)", notifyWallets*notifyPerWallet, time.Since(t0).Round(time.Millisecond))

		key := benchWallet(7)
		// Distinct messages without a shared clock between workers: the whole second of now, plus a
		// sequence number in microseconds.
		var seq atomic.Int64
		signed := func(int) http.Header {
			n := seq.Add(1)
			ts := float64(time.Now().Unix()) + float64(n%1_000_000)/1e6
			hdr, err := notify.Sign(key, notify.Message{Action: notify.ActionNotifications, Ts: ts}, notify.Base58)
			if err != nil {
				panic(err)
			}
			h := http.Header{}
			hdr.Set(h)
			return h
		}
		srv := httptest.NewServer(svc.Handler())
		defer srv.Close()
		firstPage := getSigned(b, srv.URL+"/notifications", signed(0))

		baseline := &notify.Verifier{Action: notify.ActionNotifications, Window: notify.DefaultWindow, Now: time.Now,
			Signatures: &memorySignatures{}}
		bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := baseline.Authenticate(r); err != nil {
				httpapi.WriteError(w, r, err, nil)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(firstPage)
		}))
		defer bare.Close()
		bareURL, feedURL := bare.URL+"/notifications", srv.URL+"/notifications"
		runs := compareREST(b, "", []restScenario{
			{name: "bare handler, signature verified, page from memory", url: func(int) string { return bareURL }, header: signed},
			{name: "notifications feed, first page, signature recorded", url: func(int) string { return feedURL }, header: signed},
		}, func(i, round int) func(loadgen.Result) string {
			if i == 0 {
				// Each bare run starts with an empty replay record: kept across rounds, hundreds of
				// thousands of signatures would stay in this process' heap, for the collector to mark
				// during the service's rounds too.
				baseline.Signatures = &memorySignatures{}
			}
			stopProfile := func() {}
			if *notifyProfile != "" && i == 1 && round == restRounds-1 {
				stopProfile = startCPUProfile(b, *notifyProfile)
			}
			pg0 := postgresCPU()
			return func(loadgen.Result) string {
				cpu := postgresCPU().since(pg0)
				stopProfile()
				return fmt.Sprintf("; Postgres %s", cpu)
			}
		})
		var used int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM notify.used_signatures").Scan(&used); err != nil {
			b.Fatal(err)
		}
		ratio := runs[1].best.RPS / runs[0].best.RPS
		b.ReportMetric(runs[0].best.RPS, "bare_req/s")
		b.ReportMetric(runs[1].best.RPS, "notify_feed_req/s")
		b.ReportMetric(ratio, "solo_ratio")
		b.ReportMetric(float64(runs[1].worstP99.Microseconds())/1000, "p99_ms")
		b.Logf("RESULT notify: first page of one wallet's feed over %d notifications, every request freshly signed, "+
			"verified and its signature recorded (%d recorded), %d connections: %.0f req/s against the bare handler's %.0f "+
			"(same verification, replay record in memory, page from memory): %s, p99 %s (worst round; target < 10 ms)",
			notifyWallets*notifyPerWallet, used, restConcurrency, runs[1].best.RPS, runs[0].best.RPS, atLeast(ratio, 0.5), runs[1].worstP99)
	}
}

// getSigned GETs url with header and returns the body of its 200.
func getSigned(b *testing.B, url string, header http.Header) []byte {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %d %s %v", url, resp.StatusCode, body, err)
	}
	return body
}
