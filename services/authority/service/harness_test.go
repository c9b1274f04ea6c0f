package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/operator/local"
	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/services/authority"
	"github.com/tidemark/tidemark/services/authority/service"
)

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard()) // the Kubernetes clients of the tests log nothing
	code := kittest.Main(m)
	stopCluster()
	os.Exit(code)
}

var (
	now    = kittest.DefaultNow
	key    = kittest.Key
	at     = kittest.At
	encode = kittest.Encode
)

// The wallets and accounts of the tests: wallet has two subaccounts, builder is a builder.
var (
	wallet, builder, stranger = key(40), key(41), key(42)
	main, sub1                = key(50), key(51)
	builderAcct               = key(52)
)

// clock is the real clock shifted by an offset that tests move forward: the export jobs' retry
// window and download windows are measured on it, against the jobs' real creation and expiry times.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// stack is the authority service with the dev stack's export runner on a folder store whose
// download URLs are served over HTTP, and the runner's sources pointing at the service's internal
// port.
type stack struct {
	*kittest.Stack
	runner        *local.Runner
	files         *objstore.Local
	clock         *clock
	maxUnfinished int
}

type options struct {
	maxUnfinished int
	sources       map[v1alpha1.FileType]string // more export sources (the authority's own is added)
	block         bool                         // do not run the runner: jobs stay pending
}

func start(t *testing.T, o options) *stack {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	files, err := objstore.NewLocal(objstore.LocalConfig{Dir: t.TempDir(), BaseURL: srv.URL + "/downloads",
		Key: []byte("authority-test-key-0123456789abcdef"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/downloads/", http.StripPrefix("/downloads", files.Handler()))
	sources := map[v1alpha1.FileType]string{}
	for k, v := range o.sources {
		sources[k] = v
	}
	runner, err := local.New(export.Config{}, export.Deps{Store: files, Source: export.HTTPSource{Endpoints: sources, Client: &http.Client{}},
		Logger: slog.New(slog.DiscardHandler)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{}
	s := kittest.Up(t, kittest.Options{}, service.Service(service.Config{
		MaxUnfinishedExports: o.maxUnfinished, Exports: &service.Exports{Jobs: runner, Files: files}, Clock: c.Now,
	}))
	sources["if-stake-records"] = s.InternalServer(t, "authority").URL
	if !o.block {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runner.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runner: %v", err)
			}
		})
	}
	return &stack{Stack: s, runner: runner, files: files, clock: c, maxUnfinished: o.maxUnfinished}
}

// newUser is the creation of subaccount sub of authority, account key account.
func newUser(authority, account string, sub int, ts int64) *events.NewUser {
	name := "Main Account"
	if sub > 0 {
		name = "Subaccount " + string(rune('0'+sub))
	}
	return &events.NewUser{
		Tx:            events.Tx{Ts: ts, TxSig: kittest.Sig("newus", sub+int(ts%100000)*10), Slot: 2*ts - 3_000_000_000}, // slots grow with time
		UserAuthority: authority, User: account, SubAccountID: sub, Name: name}
}

// ifStake is authority's stake in spot market m at ts.
func ifStake(authority string, m kittest.Market, ts int64, id int) *events.IFStake {
	r := kittest.IFStake(m, ts, id, true)
	r.UserAuthority = authority
	return r
}

// lpMint is authority's mint of LP tokens at ts.
func lpMint(authority string, ts int64, id int) *events.LPMintRedeem {
	return &events.LPMintRedeem{
		Tx: events.Tx{Ts: ts, TxSig: kittest.Sig("lpmnt", id), Slot: 300_000_000 + int64(id)}, SpotMarketIndex: 0, ConstituentIndex: 0,
		LastAumSlot: 299_999_000, Description: events.LPDescriptionMint, Authority: authority, Amount: "1000000000", Fee: "-10000",
		OraclePrice: "1000000", Mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", LpAmount: "985000000", LpFee: "0",
		LpPrice: "1015200", MintRedeemID: "44" + string(rune('0'+id%10)), LastAum: "25000000000000", InMarketCurrentWeight: "610000",
		InMarketTargetWeight: "600000", LpPool: key(93),
	}
}

// snapshotsOf are account's (of authority) trading, earn and vault snapshots at ts.
func snapshotsOf(authority, account string, ts, balance int64) []events.Record {
	var out []events.Record
	for _, r := range []*events.AccountSnapshot{kittest.TradingSnapshot(account, ts, balance), kittest.EarnSnapshot(account, ts),
		kittest.VaultSnapshot(account, ts)} {
		r.Authority = authority
		out = append(out, r)
	}
	return out
}

func referral(authority string, ts int64, count int64) *events.AccountSnapshot {
	return &events.AccountSnapshot{Kind: events.SnapshotReferral, Authority: authority, Ts: ts,
		Referral: &events.ReferralSnapshot{ReferralRewards: events.NewAmount(count * 1000), ReferralCount: events.NewAmount(count),
			ReferredUsers: []string{key(60)}, ReferredVolume30D: "5000000"}}
}

// seed ingests the wallet's accounts, a builder and an escrow, stakes, LP records, a day and more of
// hourly snapshots of both subaccounts and the wallet's daily referral snapshots.
func seed(t *testing.T, s *stack) {
	t.Helper()
	seedInto(t, s)
}

// ingester takes messages: a stack ingests them, a recordingStack keeps them.
type ingester interface {
	Ingest(t testing.TB, msgs ...events.Message)
}

type recordingStack struct{ msgs []events.Message }

func (r *recordingStack) Ingest(_ testing.TB, msgs ...events.Message) {
	r.msgs = append(r.msgs, msgs...)
}

func seedInto(t *testing.T, s ingester) {
	t.Helper()
	t0 := at("2026-11-01T00:00:00Z")
	nu := newUser(wallet, main, 0, t0)
	nu.RevenueShareEscrow = &events.RevenueShareEscrow{AccountID: key(53),
		ApprovedBuilders: []events.ApprovedBuilder{{Authority: builder, MaxFeeTenthBps: 25}}}
	bu := newUser(builder, builderAcct, 0, t0)
	bu.BuilderRevenueShareAccount = &events.BuilderAccount{AccountID: key(54), TotalBuilderRewards: "1500000"}
	msgs := encode(t, events.TopicNewUsers, nu, newUser(wallet, sub1, 1, t0+60), bu)
	msgs = append(msgs, encode(t, events.TopicIFStakes,
		ifStake(wallet, kittest.USDC, at("2026-11-18T10:00:00Z"), 1), ifStake(wallet, kittest.SOLSpot, at("2026-11-19T10:00:00Z"), 2),
		ifStake(stranger, kittest.USDC, at("2026-11-19T11:00:00Z"), 3))...)
	msgs = append(msgs, encode(t, events.TopicLPMintRedeem, lpMint(wallet, at("2026-11-18T12:00:00Z"), 1), lpMint(wallet, at("2026-11-19T12:00:00Z"), 2))...)
	hour := now.Unix() - now.Unix()%3600
	for h := int64(0); h < 30; h++ {
		ts := hour - h*3600 + 60
		for _, acct := range []string{main, sub1} {
			msgs = append(msgs, encode(t, events.TopicAccountSnapshots, snapshotsOf(wallet, acct, ts, 1000+h)...)...)
		}
	}
	day := now.Unix() - now.Unix()%86400
	for d := int64(0); d < 3; d++ {
		msgs = append(msgs, encode(t, events.TopicAccountSnapshots, referral(wallet, day-d*86400, 3-d))...)
	}
	s.Ingest(t, msgs...)
}

// post POSTs body to path through the validator and returns the answer.
func (s *stack) post(t *testing.T, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return s.Validator.Serve(t, s.Handler(), req)
}

// exportCreated is the answer of a POST.
type exportCreated struct {
	Success   bool   `json:"success"`
	RequestID string `json:"requestId"`
	Status    string `json:"status"`
}

// createExport POSTs body and expects a job.
func (s *stack) createExport(t *testing.T, authority, body string) exportCreated {
	t.Helper()
	rec := s.post(t, "/authority/"+authority+"/exports", body)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST exports %s: %d %s", body, rec.Code, rec.Body)
	}
	var c exportCreated
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil || !c.Success || c.RequestID == "" {
		t.Fatalf("POST exports: %s", rec.Body)
	}
	return c
}

type exportPage struct {
	Success bool               `json:"success"`
	Records []authority.Record `json:"records"`
	Meta    struct {
		NextPage *string `json:"nextPage"`
	} `json:"meta"`
}

func (s *stack) exports(t *testing.T, authority, query string) exportPage {
	t.Helper()
	var p exportPage
	s.GetJSON(t, "/authority/"+authority+"/exports"+query, http.StatusOK, &p)
	return p
}

// waitStatus polls the list until the job requestID has status, and returns its record.
func (s *stack) waitStatus(t *testing.T, wallet, requestID, status string) authority.Record {
	t.Helper()
	var got authority.Record
	kittest.Eventually(t, 60*time.Second, requestID+" "+status, func() bool {
		for _, r := range s.exports(t, wallet, "").Records {
			if r.RequestID == requestID {
				got = r
				if r.Status == "failed" && status != "failed" {
					t.Fatalf("%s failed: %v", requestID, *r.ErrorReason)
				}
				return r.Status == status
			}
		}
		return false
	})
	return got
}

// download GETs u and returns the body, failing unless it is 200.
func download(t *testing.T, u string) []byte {
	t.Helper()
	a := kittest.Fetch(t, http.MethodGet, u)
	if a.Status != http.StatusOK {
		t.Fatalf("download %s: %d %s", u, a.Status, bytes.TrimSpace(a.Body))
	}
	return a.Body
}
