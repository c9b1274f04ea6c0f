package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// Writer delivers messages, e.g. to Kafka. Write returns once every message is stored and must not
// keep msgs after it returns.
type Writer interface {
	Write(ctx context.Context, msgs ...events.Message) error
}

// backfillBatch is how many messages Backfill hands to one Write: big enough for the writer to fill
// its per-partition batches.
const backfillBatch = 20000

// Backfill writes `days` days of history ending now through w, as fast as w takes it, reporting
// progress on progress (nil = silent). Live on the same Simulator continues where it ends.
func (s *Simulator) Backfill(ctx context.Context, w Writer, days int, progress io.Writer) error {
	if days <= 0 {
		return fmt.Errorf("backfill needs a positive number of days, got %d", days)
	}
	end := s.cfg.Now().Unix()
	start := max(epoch, end-int64(days)*secondsPerDay)
	if err := s.write(ctx, w, start, end, progress); err != nil {
		return fmt.Errorf("backfill: %w", err)
	}
	return nil
}

// Write writes the history of [from, to) through w, in the batches Backfill writes, as fast as w
// takes it: a window of the simulated history for a test or a bench.
func (s *Simulator) Write(ctx context.Context, w Writer, from, to time.Time) error {
	return s.write(ctx, w, from.Unix(), to.Unix(), nil)
}

// write writes [start, end) through w in batches of backfillBatch, reporting progress.
func (s *Simulator) write(ctx context.Context, w Writer, start, end int64, progress io.Writer) error {
	bar := newProgressBar(progress, start, end)
	batch := make([]events.Message, 0, backfillBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := w.Write(ctx, batch...); err != nil {
			return fmt.Errorf("write %d messages: %w", len(batch), err)
		}
		bar.add(len(batch))
		batch = batch[:0]
		return nil
	}
	err := s.generate(start, end, func(ts int64, m events.Message) error {
		batch = append(batch, m)
		bar.at(ts)
		if len(batch) < backfillBatch {
			return nil
		}
		return flush()
	})
	if err == nil {
		err = flush()
	}
	bar.done(err == nil)
	return err
}

// Live streams events at the current time through w until ctx ends (then it returns nil). rate > 0
// sets the mean message rate per second by scaling FillsPerMinute; rate <= 0 keeps the configured
// flow. Market states then come every LiveMarketStateInterval, when set, on top of that rate. After Backfill on the same Simulator it first catches up from where the backfill ended.
func (s *Simulator) Live(ctx context.Context, w Writer, rate float64) error {
	if rate > 0 {
		s.cfg.FillsPerMinute = s.fillsForRate(rate)
		s.cachedMinute, s.cachedHour = -1, -1 // the flows changed
	}
	// After the rate is solved: per-slot states come on top of it rather than in place of fills.
	if s.cfg.LiveMarketStateInterval > 0 {
		s.cfg.MarketStateInterval = s.cfg.LiveMarketStateInterval
		s.cachedMinute = -1 // the minute's states changed
	}
	now := s.cfg.Now().Unix()
	cursor := now
	if s.cursor > 0 && now-s.cursor < 3600 && s.cursor <= now {
		cursor = s.cursor
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var batch []events.Message
	for {
		if now := s.cfg.Now().Unix(); now > cursor {
			batch = batch[:0]
			err := s.generate(cursor, now, func(_ int64, m events.Message) error {
				batch = append(batch, m)
				return nil
			})
			if err != nil {
				return fmt.Errorf("live: %w", err)
			}
			if len(batch) > 0 {
				if err := w.Write(ctx, batch...); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("live: write %d messages: %w", len(batch), err)
				}
			}
			cursor = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// fillsForRate solves the mean message rate (per second) for the fill rate: the minute flows scale
// with fills, the rest (market states, hourly plans) is a fixed background.
func (s *Simulator) fillsForRate(rate float64) float64 {
	accounts := float64(len(s.pop.actors))
	perMinute := float64(len(s.markets)) * 60 / s.cfg.MarketStateInterval.Seconds()
	hourly := 4 + 2 + 3 + 1 + accounts*0.3*4*0.2 + // funding, IF, vaults, params, payments
		accounts*2.1/s.cfg.SnapshotInterval.Hours()
	background := perMinute + hourly/60
	fills := (rate*60 - background) / messagesPerFill
	return math.Max(0.5, math.Min(maxFillsPerMinute, fills))
}

// Backfill runs Simulator.Backfill with DefaultConfig.
func Backfill(ctx context.Context, w Writer, days int, progress io.Writer) error {
	return New(DefaultConfig()).Backfill(ctx, w, days, progress)
}

// Live runs Simulator.Live with DefaultConfig.
func Live(ctx context.Context, w Writer, rate float64) error {
	return New(DefaultConfig()).Live(ctx, w, rate)
}

// progressBar draws "[####    ]  42.0%  1234567 msgs  85000 msg/s  ETA 1m05s" on one terminal line,
// progress measured in simulated time.
type progressBar struct {
	w          io.Writer
	start, end int64
	cur        int64
	written    int
	began      time.Time
	drawn      time.Time
}

func newProgressBar(w io.Writer, start, end int64) *progressBar {
	return &progressBar{w: w, start: start, end: end, cur: start, began: time.Now()}
}

func (p *progressBar) at(ts int64) { p.cur = ts }

func (p *progressBar) add(n int) {
	p.written += n
	if p.w != nil && time.Since(p.drawn) >= 200*time.Millisecond {
		p.draw(false)
	}
}

func (p *progressBar) done(ok bool) {
	if p.w == nil {
		return
	}
	if ok {
		p.cur = p.end
	}
	p.draw(true)
}

func (p *progressBar) draw(final bool) {
	p.drawn = time.Now()
	frac := 1.0
	if p.end > p.start {
		frac = math.Min(1, math.Max(0, float64(p.cur-p.start)/float64(p.end-p.start)))
	}
	elapsed := time.Since(p.began)
	rate := float64(p.written) / math.Max(elapsed.Seconds(), 1e-3)
	eta := "--"
	if frac > 0 && !final {
		eta = (time.Duration(float64(elapsed) * (1 - frac) / frac)).Round(time.Second).String()
	}
	const width = 30
	filled := int(frac * width)
	line := fmt.Sprintf("\r[%s%s] %5.1f%%  %d msgs  %.0f msg/s  ETA %s ",
		strings.Repeat("#", filled), strings.Repeat(" ", width-filled), frac*100, p.written, rate, eta)
	if final {
		line += fmt.Sprintf("in %s\n", elapsed.Round(time.Millisecond))
	}
	// Progress is best effort: a closed terminal must not fail the backfill.
	_, _ = io.WriteString(p.w, line)
}
