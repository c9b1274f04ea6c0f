package stats

import (
	"cmp"
	"strings"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
)

// Board is a leaderboard: wallets ranked by one of their monthly figures.
type Board string

// The leaderboards. A board lists the wallets whose figure on it is not zero, highest first, ties
// sharing a rank (and listed by authority).
const (
	BoardPnl    Board = "pnl"    // settled P&L
	BoardVolume Board = "volume" // maker plus taker volume
	BoardMaker  Board = "maker"  // volume as maker
	BoardTaker  Board = "taker"  // volume as taker
)

// Boards lists every board, the default first.
var Boards = []Board{BoardPnl, BoardVolume, BoardMaker, BoardTaker}

// Leaderboard page bounds: limit is 1..MaxLimit (default DefaultLimit), page 1..MaxPage.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	MaxPage      = 1_000_000
)

// LeaderboardQuery selects a page of a board of a month.
type LeaderboardQuery struct {
	Month       int64
	Board       Board
	Page, Limit int
}

// Offset is how many wallets rank before the page.
func (q LeaderboardQuery) Offset() int { return (q.Page - 1) * q.Limit }

// Leader is a wallet on a board: its rank and its monthly figures (quote, 1e6).
type Leader struct {
	Rank        int64         `json:"rank"`
	Authority   string        `json:"authority"`
	Volume      events.Amount `json:"volume"`
	MakerVolume events.Amount `json:"makerVolume"`
	TakerVolume events.Amount `json:"takerVolume"`
	Pnl         events.Amount `json:"pnl"`
}

// Figure is the leader's figure on board.
func (l Leader) Figure(b Board) events.Amount {
	switch b {
	case BoardVolume:
		return l.Volume
	case BoardMaker:
		return l.MakerVolume
	case BoardTaker:
		return l.TakerVolume
	}
	return l.Pnl
}

// LeaderboardPage is a page of a board and how many wallets the board holds.
type LeaderboardPage struct {
	Leaders []Leader
	Total   int64
}

// Rank gives the leaders of a page, in board order, their ranks: a wallet's rank is one plus the
// number of wallets with a strictly higher figure, so ties share a rank and the next rank skips
// (1, 2, 2, 4). ahead is the number of wallets strictly ahead of the page's first; offset the
// number of wallets listed before the page.
func Rank(leaders []Leader, b Board, offset int, ahead int64) error {
	var prev *events.Amount
	for i := range leaders {
		fig := leaders[i].Figure(b)
		switch {
		case prev == nil:
			leaders[i].Rank = ahead + 1
		default:
			c, err := compareAmounts(fig, *prev)
			if err != nil {
				return err
			}
			if c > 0 {
				return fault.Errorf(fault.Internal, "leaderboard %s out of order at %s", b, leaders[i].Authority)
			}
			if c < 0 {
				leaders[i].Rank = int64(offset + i + 1)
			} else {
				leaders[i].Rank = leaders[i-1].Rank
			}
		}
		prev = &fig
	}
	return nil
}

// compareAmounts compares two integer strings in their canonical form (no leading zeros, no "-0"),
// as the store writes sums, without parsing them: by sign, then length, then digits.
func compareAmounts(a, b events.Amount) (int, error) {
	if !a.Valid() || !b.Valid() {
		return 0, fault.Errorf(fault.Internal, "leaderboard figures %q and %q are not integers", a, b)
	}
	na, nb := strings.HasPrefix(string(a), "-"), strings.HasPrefix(string(b), "-")
	switch {
	case na && !nb:
		return -1, nil
	case !na && nb:
		return 1, nil
	}
	c := cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(string(a), string(b)))
	if na {
		return -c, nil
	}
	return c, nil
}

// Standing is a wallet's month: its figures (quote, 1e6) and its rank on each board, nil on a board
// it is not on.
type Standing struct {
	Authority   string        `json:"authority"`
	Month       string        `json:"month"`
	Volume      events.Amount `json:"volume"`
	MakerVolume events.Amount `json:"makerVolume"`
	TakerVolume events.Amount `json:"takerVolume"`
	Pnl         events.Amount `json:"pnl"`
	Rank        Ranks         `json:"rank"`
}

// Ranks are a wallet's ranks on every board.
type Ranks struct {
	Pnl    *int64 `json:"pnl"`
	Volume *int64 `json:"volume"`
	Maker  *int64 `json:"maker"`
	Taker  *int64 `json:"taker"`
}
