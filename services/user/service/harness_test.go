package service_test

import (
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/services/user/service"
)

func TestMain(m *testing.M) { os.Exit(kittest.Main(m)) }

func start(t *testing.T) *kittest.Stack {
	t.Helper()
	return kittest.Up(t, kittest.Options{}, service.Service())
}

// taker and maker are the accounts of kittest.Fill's fills.
var taker, maker = kittest.Key(2), kittest.Key(3)

var encode = kittest.Encode

// list is a page of any list.
type list struct {
	Success bool              `json:"success"`
	Records []json.RawMessage `json:"records"`
	Meta    struct {
		NextPage     any `json:"nextPage"`
		TotalRecords int `json:"totalRecords"`
		TotalPages   int `json:"totalPages"`
	} `json:"meta"`
}

func getList(t *testing.T, s *kittest.Stack, path string) list {
	t.Helper()
	var l list
	s.GetJSON(t, path, http.StatusOK, &l)
	return l
}

// fill is kittest.Fill of base for quote at price quote/base, with the taker going direction.
func fill(m kittest.Market, ts int64, id int, takerDirection string, base, quote int64) *events.Fill {
	f := kittest.Fill(m, ts, id, quote, base, quote*1000/base*1000)
	f.TakerOrderDirection = takerDirection
	f.MakerOrderDirection = events.DirectionShort
	if takerDirection == events.DirectionShort {
		f.MakerOrderDirection = events.DirectionLong
	}
	return f
}
