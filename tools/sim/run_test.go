package sim_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/tools/sim"
)

// collector is a sim.Writer keeping what it is given.
type collector struct {
	mu     sync.Mutex
	msgs   []events.Message
	writes int
	err    error // returned by every Write when set
}

func (c *collector) Write(_ context.Context, msgs ...events.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	c.msgs = append(c.msgs, msgs...)
	c.writes++
	return nil
}

func (c *collector) snapshot() []events.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]events.Message(nil), c.msgs...)
}

// clock is a settable Config.Now.
type clock struct{ unix atomic.Int64 }

func (c *clock) now() time.Time   { return time.Unix(c.unix.Load(), 0) }
func (c *clock) set(t time.Time)  { c.unix.Store(t.Unix()) }
func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }

func tsRange(tb testing.TB, msgs []events.Message) (first, last int64) {
	tb.Helper()
	for i, m := range msgs {
		ts := eventTs(tb, decode(tb, m))
		if i == 0 {
			first = ts
		}
		if ts < last {
			tb.Fatalf("message %d at %d after %d", i, ts, last)
		}
		last = ts
	}
	return first, last
}

func TestBackfillWritesHistoryEndingNow(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC)
	s := sim.New(sim.Config{Seed: 3, Authorities: 10, FillsPerMinute: 5, Now: newClock(now).now})
	var w collector
	var progress bytes.Buffer
	if err := s.Backfill(context.Background(), &w, 1, &progress); err != nil {
		t.Fatal(err)
	}
	msgs := w.snapshot()
	first, last := tsRange(t, msgs)
	if want := now.Add(-24 * time.Hour).Unix(); first != want {
		t.Errorf("history starts at %d, want %d", first, want)
	}
	if last >= now.Unix() || last < now.Add(-time.Minute).Unix() {
		t.Errorf("history ends at %d, want just before %d", last, now.Unix())
	}
	direct := generate(t, sim.New(sim.Config{Seed: 3, Authorities: 10, FillsPerMinute: 5}), now.Add(-24*time.Hour), now)
	if !sameMessages(msgs, direct) {
		t.Errorf("backfill wrote %d messages, Generate over the same day gives %d", len(msgs), len(direct))
	}
	if w.writes < 2 {
		t.Errorf("%d writes for %d messages: want batches", w.writes, len(msgs))
	}
	if out := progress.String(); !strings.Contains(out, "100.0%") || !strings.HasSuffix(out, "\n") {
		t.Errorf("progress output %q", out)
	}
}

func TestBackfillReportsWriteErrors(t *testing.T) {
	boom := errors.New("broker down")
	s := sim.New(sim.Config{Seed: 3, Authorities: 10, Now: newClock(windowStart).now})
	err := s.Backfill(context.Background(), &collector{err: boom}, 1, nil)
	if !errors.Is(err, boom) {
		t.Errorf("Backfill = %v, want the writer's error", err)
	}
	if err := s.Backfill(context.Background(), &collector{}, 0, nil); err == nil {
		t.Error("Backfill of 0 days: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sim.New(sim.Config{Now: newClock(windowStart).now}).Backfill(ctx, &collector{}, 1, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Backfill with a cancelled context = %v", err)
	}
}

func TestLiveContinuesWhereBackfillEnded(t *testing.T) {
	clk := newClock(windowStart)
	s := sim.New(sim.Config{Seed: 8, Authorities: 10, FillsPerMinute: 20, Now: clk.now})
	var back collector
	if err := s.Backfill(context.Background(), &back, 1, nil); err != nil {
		t.Fatal(err)
	}
	clk.set(windowStart.Add(2 * time.Minute))

	var live collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Live(ctx, &live, 0) }()
	kittest.Eventually(t, 10*time.Second, "the catch-up write", func() bool { return len(live.snapshot()) > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Live = %v", err)
	}
	msgs := live.snapshot()
	first, last := tsRange(t, msgs)
	if first < windowStart.Unix() || last >= windowStart.Add(2*time.Minute).Unix() {
		t.Errorf("live covered [%d, %d], want within the two minutes after the backfill", first, last)
	}
	for _, m := range msgs {
		if m.Topic == events.TopicNewUsers {
			t.Fatal("live announced the accounts again")
		}
	}
	// Backfill then live is the same stream as one generation over both windows.
	all := append(back.snapshot(), msgs...)
	want := generate(t, sim.New(sim.Config{Seed: 8, Authorities: 10, FillsPerMinute: 20}),
		windowStart.Add(-24*time.Hour), windowStart.Add(2*time.Minute))
	if !sameMessages(all, want) {
		t.Errorf("backfill+live gave %d messages, one window %d", len(all), len(want))
	}
}

func TestLiveRate(t *testing.T) {
	clk := newClock(windowStart)
	s := sim.New(sim.Config{Seed: 4, Authorities: 10, Now: clk.now})
	var w collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Live(ctx, &w, 50) }()
	// Nudge the clock until Live has written once, so its cursor is known to be the clock's time.
	kittest.Eventually(t, 10*time.Second, "a first write", func() bool {
		if len(w.snapshot()) > 0 {
			return true
		}
		clk.set(clk.now().Add(time.Second))
		return false
	})
	from := clk.now()
	clk.set(from.Add(10 * time.Minute))
	// Market states every 30s guarantee an event in the window's last half minute; once it is
	// written, the whole window is (the clock only moves to its end).
	kittest.Eventually(t, 10*time.Second, "ten more minutes of events", func() bool {
		msgs := w.snapshot()
		return eventTs(t, decode(t, msgs[len(msgs)-1])) >= from.Add(570*time.Second).Unix()
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Live = %v", err)
	}
	n := 0
	for _, m := range w.snapshot() {
		if ts := eventTs(t, decode(t, m)); ts >= from.Unix() && m.Topic != events.TopicNewUsers {
			n++
		}
	}
	if rate := float64(n) / 600; rate < 40 || rate > 60 {
		t.Errorf("%.1f messages a second, want about 50", rate)
	}
}

func TestLiveStreamsAtTheWallClock(t *testing.T) {
	s := sim.New(sim.Config{Seed: 2, Authorities: 5})
	var w collector
	start := time.Now().Unix()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Live(ctx, &w, 200) }()
	kittest.Eventually(t, 15*time.Second, "streamed events", func() bool {
		for _, m := range w.snapshot() {
			if m.Topic != events.TopicNewUsers {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Live = %v", err)
	}
	first, last := tsRange(t, w.snapshot())
	if first < start || last > time.Now().Unix() {
		t.Errorf("events at [%d, %d], want between %d and now", first, last, start)
	}
}

// TestFillIDsStayContiguousWhenLiveChangesTheRate: Live at a new rate plans the backfill's last
// minute again; the fills it emits after the backfill still continue each market's ids.
func TestFillIDsStayContiguousWhenLiveChangesTheRate(t *testing.T) {
	clk := newClock(windowStart.Add(30 * time.Second))
	s := sim.New(sim.Config{Seed: 8, Authorities: 10, FillsPerMinute: 10, Now: clk.now})
	var back collector
	if err := s.Backfill(context.Background(), &back, 1, nil); err != nil {
		t.Fatal(err)
	}
	clk.set(windowStart.Add(3 * time.Minute))
	var live collector
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Live(ctx, &live, 20) }()
	kittest.Eventually(t, 10*time.Second, "the catch-up write", func() bool { return len(live.snapshot()) > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Live = %v", err)
	}
	// In the chain's order (slot, transaction, position) each market's ids go up one by one.
	type fill struct {
		slot int64
		sig  string
		at   int // the message's place: a slot's transactions come in the planned order
		idx  int
		id   int64
	}
	byMarket := map[string][]fill{}
	first := map[string]int{}
	liveFills := 0
	backfilled := back.snapshot()
	for i, m := range append(backfilled, live.snapshot()...) {
		var tx struct {
			TxSig string `json:"txSig"`
		}
		if err := json.Unmarshal(m.Value, &tx); err == nil && tx.TxSig != "" {
			if _, seen := first[tx.TxSig]; !seen {
				first[tx.TxSig] = i // where the transaction's first record is
			}
		}
		if m.Topic != events.TopicFills {
			continue
		}
		f, ok := asFill(decode(t, m))
		if !ok {
			continue
		}
		if i >= len(backfilled) {
			liveFills++
		}
		id, err := strconv.ParseInt(f.FillRecordID, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		byMarket[f.Symbol] = append(byMarket[f.Symbol], fill{slot: f.Slot, sig: f.TxSig, at: first[f.TxSig], idx: f.TxSigIndex, id: id})
	}
	for market, fills := range byMarket {
		slices.SortStableFunc(fills, func(a, b fill) int {
			return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.at, b.at), cmp.Compare(a.idx, b.idx))
		})
		for i := 1; i < len(fills); i++ {
			if fills[i].id != fills[i-1].id+1 {
				t.Fatalf("%s: fill id %d after %d in the chain's order", market, fills[i].id, fills[i-1].id)
			}
		}
	}
	if liveFills == 0 {
		t.Fatal("no live fill")
	}
}
