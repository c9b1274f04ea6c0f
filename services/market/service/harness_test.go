package service_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/market/service"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

// now is the tests' fixed clock.
var now = kittest.DefaultNow

// stack is the market service on a fresh database and a fresh embedded broker.
type stack struct {
	*kittest.Stack
}

func startStack(t *testing.T) *stack {
	t.Helper()
	return &stack{kittest.Up(t, kittest.Options{}, service.Service(service.Config{}))}
}

// ingest produces msgs and waits until the service has stored every one of them.
func (s *stack) ingest(t *testing.T, msgs ...events.Message) { t.Helper(); s.Ingest(t, msgs...) }

// count is the number of rows of the market schema's table.
func (s *stack) count(t *testing.T, table string) int { t.Helper(); return s.Count(t, "market."+table) }

// get serves path and validates the answer against the OpenAPI document.
func (s *stack) get(t *testing.T, path string) *httptest.ResponseRecorder {
	t.Helper()
	return s.Get(t, path)
}

// getJSON GETs path, expects status and decodes the body.
func (s *stack) getJSON(t *testing.T, path string, status int, into any) {
	t.Helper()
	s.GetJSON(t, path, status, into)
}

// ---- event builders: the kit's ----

type mkt = kittest.Market

var (
	solPerp = kittest.SOLPerp
	btcPerp = kittest.BTCPerp
	betMkt  = kittest.BetMkt
	usdc    = kittest.USDC
	solSpot = kittest.SOLSpot
)

var (
	sig           = kittest.Sig
	key           = kittest.Key
	fill          = kittest.Fill
	fundingRate   = kittest.FundingRate
	insuranceFund = kittest.InsuranceFund
	ifStake       = kittest.IFStake
	swap          = kittest.Swap
	deposit       = kittest.Deposit
	at            = kittest.At
	encode        = kittest.Encode
)

func mustContain(t *testing.T, body, want string) {
	t.Helper()
	if !strings.Contains(body, want) {
		t.Fatalf("body %q does not contain %q", body, want)
	}
}

// produce writes msgs without waiting for the service to consume them.
func (s *stack) produce(t *testing.T, msgs ...events.Message) { t.Helper(); s.Produce(t, msgs...) }

var _ = context.Background
