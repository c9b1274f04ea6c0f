package market

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HotDays is how many days of candles each resolution keeps in memory (Hot); a resolution it does not
// name, or names with 0 days, is always read from the store.
type HotDays map[Resolution]int

// DefaultHotDays keeps about four 1000-bar chart pages of every intraday resolution, the pages a chart
// opens on and scrolls back through, and every daily, weekly and monthly bar since the archive began.
var DefaultHotDays = HotDays{"1": 3, "5": 14, "15": 42, "60": 168, "240": 672, "D": 1500, "W": 1500, "M": 1500}

// MaxHotDays bounds a resolution's days: ten years of daily bars are still a few hundred kilobytes a
// market, and a larger figure is more likely a typo than a wish.
const MaxHotDays = 3650

// ParseHotDays reads "res:days" items (as TIDEMARK_MARKET_HOT_DAYS lists them); the resolutions not
// named keep DefaultHotDays'.
func ParseHotDays(items []string) (HotDays, error) {
	out := make(HotDays, len(DefaultHotDays))
	for r, d := range DefaultHotDays {
		out[r] = d
	}
	for _, it := range items {
		rs, ds, ok := strings.Cut(it, ":")
		res, err := ParseResolution(strings.TrimSpace(rs))
		if !ok || err != nil {
			return nil, fmt.Errorf("%q is not <resolution>:<days> with a resolution of 1, 5, 15, 60, 240, D, W or M", it)
		}
		d, err := strconv.Atoi(strings.TrimSpace(ds))
		if err != nil || d < 0 || d > MaxHotDays {
			return nil, fmt.Errorf("%q: days must be a whole number from 0 to %d", it, MaxHotDays)
		}
		out[res] = d
	}
	return out, nil
}

// Strings lists d as ParseHotDays reads it, in the order of Resolutions.
func (d HotDays) Strings() []string {
	var out []string
	for _, r := range Resolutions() {
		out = append(out, string(r)+":"+strconv.Itoa(d[r]))
	}
	return out
}

// Validate reports days out of range.
func (d HotDays) Validate() error {
	for r, n := range d {
		if _, err := ParseResolution(string(r)); err != nil {
			return err
		}
		if n < 0 || n > MaxHotDays {
			return fmt.Errorf("resolution %s: %d days, want 0 to %d", r, n, MaxHotDays)
		}
	}
	return nil
}

// Hot holds the recent candles of every market and resolution in memory, so that the candles a chart
// reads most are encoded from memory rather than read from the store. It is filled and kept current by
// its follower (postgres.Follower): loaded from the store, then every committed candle change read
// again. It answers only what it holds exactly as the store does: a window before its range, a market
// it has not loaded, or a market with a change in flight on this process is left to the store.
//
// A series is columns of the stored buckets' fields, not bucket records: it is what an answer is made
// from, at a fixed cost per bucket, and nothing in it points anywhere the garbage collector must look.
// Hot is safe for concurrent use.
type Hot struct {
	days HotDays
	now  func() time.Time

	mu     sync.RWMutex
	ready  bool
	series map[hotKey]*hotSeries
	// pending are the transactions of this process' ingest that changed candles and whose change has
	// not been read back yet, by transaction id; dirty counts them by market. A market with one is
	// answered by the store: a reader that saw its fills committed must see their candles.
	pending map[int64]pendingTx
	dirty   map[string]int
}

type hotKey struct {
	symbol string
	res    Resolution
}

type pendingTx struct {
	symbols []string
	since   time.Time
}

// hotSeries is one market's buckets at one resolution from start on, every one the store holds, in
// ascending order.
type hotSeries struct {
	mu    sync.RWMutex
	start int64
	// before holds the closes of the last stored bucket before start (hasBefore), which open and carry
	// into the first buckets held.
	hasBefore                bool
	beforeFill, beforeOracle float64
	// firstFill and firstOracle are the first fills of ts[0]: its open when no bucket precedes it.
	firstFill, firstOracle float64

	ts                              []int64
	fillHigh, fillLow, fillClose    []float64
	oracleHigh, oracleLow, oraClose []float64
	quote, base                     []float64
}

// NewHot keeps days of each resolution on the clock now. It answers nothing until SetReady.
func NewHot(days HotDays, now func() time.Time) *Hot {
	return &Hot{days: days, now: now, series: map[hotKey]*hotSeries{}, pending: map[int64]pendingTx{}, dirty: map[string]int{}}
}

// Start is the first bucket of res that stays in memory now; ok is false for a resolution kept in
// the store alone.
func (h *Hot) Start(res Resolution) (start int64, ok bool) {
	d := h.days[res]
	if d <= 0 {
		return 0, false
	}
	return res.Floor(h.now().Unix() - int64(d)*86400), true
}

// SetReady makes h answer (after its load) or stop answering (its follower lost track of changes).
func (h *Hot) SetReady(ready bool) {
	h.mu.Lock()
	h.ready = ready
	h.mu.Unlock()
}

// Reset drops every series, before a load from scratch.
func (h *Hot) Reset() {
	h.mu.Lock()
	h.ready = false
	h.series = map[hotKey]*hotSeries{}
	h.mu.Unlock()
}

// Has reports whether symbol's series are loaded.
func (h *Hot) Has(symbol string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, r := range Resolutions() {
		if _, ok := h.series[hotKey{symbol, r}]; ok {
			return true
		}
	}
	return false
}

// Symbols lists the markets loaded.
func (h *Hot) Symbols() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for k := range h.series {
		if !seen[k.symbol] {
			seen[k.symbol] = true
			out = append(out, k.symbol)
		}
	}
	slices.Sort(out)
	return out
}

// SeriesStart is the first bucket held of symbol at res, if that series is loaded.
func (h *Hot) SeriesStart(symbol string, res Resolution) (int64, bool) {
	s := h.get(symbol, res)
	if s == nil {
		return 0, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.start, true
}

func (h *Hot) get(symbol string, res Resolution) *hotSeries {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.series[hotKey{symbol, res}]
}

// Load replaces symbol's series at res with stored, every stored bucket from start on in ascending
// order, and before, the last stored bucket before start (nil: none).
func (h *Hot) Load(symbol string, res Resolution, start int64, stored []Bucket, before *Bucket) {
	s := &hotSeries{start: start}
	s.setBefore(before)
	// Sized to what is loaded: appends for the live buckets grow it from there.
	n := len(stored)
	s.ts = make([]int64, 0, n)
	for _, c := range s.columns() {
		*c = make([]float64, 0, n)
	}
	s.replace(start, start-1, stored)
	h.mu.Lock()
	h.series[hotKey{symbol, res}] = s
	h.mu.Unlock()
}

// Apply merges what the store holds of symbol at res in [lo, hi] into the series: stored, all its
// buckets there in ascending order, and before, the last bucket before lo, which is taken when lo is
// the series' start. It does nothing for a series not loaded.
func (h *Hot) Apply(symbol string, res Resolution, lo, hi int64, stored []Bucket, before *Bucket) {
	s := h.get(symbol, res)
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lo = max(lo, s.start)
	if lo == s.start {
		s.setBefore(before)
	}
	s.replace(lo, hi, stored)
}

// Trim drops the buckets that fell out of the hot range as the clock moved.
func (h *Hot) Trim() {
	h.mu.RLock()
	all := make(map[hotKey]*hotSeries, len(h.series))
	for k, s := range h.series {
		all[k] = s
	}
	h.mu.RUnlock()
	for k, s := range all {
		start, ok := h.Start(k.res)
		if !ok {
			continue
		}
		s.mu.Lock()
		if start > s.start {
			n := sort.Search(len(s.ts), func(i int) bool { return s.ts[i] >= start })
			if n > 0 {
				s.hasBefore, s.beforeFill, s.beforeOracle = true, s.fillClose[n-1], s.oraClose[n-1]
				s.cut(n)
			}
			s.start = start
		}
		s.mu.Unlock()
	}
}

// Buckets is the number of buckets held and the bytes their columns take.
func (h *Hot) Buckets() (n, bytes int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, s := range h.series {
		s.mu.RLock()
		n += len(s.ts)
		bytes += 8 * (cap(s.ts) + cap(s.fillHigh) + cap(s.fillLow) + cap(s.fillClose) + cap(s.oracleHigh) +
			cap(s.oracleLow) + cap(s.oraClose) + cap(s.quote) + cap(s.base))
		s.mu.RUnlock()
	}
	return n, bytes
}

// Pending records that transaction xid of this process' ingest changes the candles of symbols: they
// are answered by the store until Resolve(xid).
func (h *Hot) Pending(xid int64, symbols []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.pending[xid]; ok {
		return
	}
	// The wall clock, not the data's: this measures how long Postgres has kept the transaction.
	h.pending[xid] = pendingTx{symbols: symbols, since: time.Now()}
	for _, s := range symbols {
		h.dirty[s]++
	}
}

// Resolve ends what Pending started for each of xids: its change is read back, or it never committed.
func (h *Hot) Resolve(xids ...int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range xids {
		p, ok := h.pending[x]
		if !ok {
			continue
		}
		delete(h.pending, x)
		for _, s := range p.symbols {
			if h.dirty[s]--; h.dirty[s] <= 0 {
				delete(h.dirty, s)
			}
		}
	}
}

// Unresolved lists the pending transactions recorded at least age ago, with their markets.
func (h *Hot) Unresolved(age time.Duration) map[int64][]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	cutoff := time.Now().Add(-age)
	var out map[int64][]string
	for x, p := range h.pending {
		if !p.since.After(cutoff) {
			if out == nil {
				out = map[int64][]string{}
			}
			out[x] = p.symbols
		}
	}
	return out
}

// AppendCandles appends to dst the candles of w for symbol at res, comma-separated as a JSON list's
// items, exactly as Assemble and Candle.AppendJSON make them from the store; ok is false, with dst
// unchanged, when h cannot answer w (the store must).
func (h *Hot) AppendCandles(dst []byte, symbol string, res Resolution, w CandleWindow) (out []byte, ok bool) {
	h.mu.RLock()
	s := h.series[hotKey{symbol, res}]
	answerable := h.ready && s != nil && h.dirty[symbol] == 0
	h.mu.RUnlock()
	if !answerable {
		return dst, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if w.Lo < s.start {
		return dst, false
	}
	return s.appendWindow(dst, res, w), true
}

// appendWindow lays out every bucket of w as Assemble does (traded buckets opening at the previous
// close, empty ones carrying it, none before the market's first trade) and appends each as it comes,
// in the window's order. w.Lo must not be before s.start.
func (s *hotSeries) appendWindow(dst []byte, r Resolution, w CandleWindow) []byte {
	n := 0
	put := func(c Candle) {
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = c.AppendJSON(dst)
	}
	if w.Hi < w.Lo {
		return dst
	}
	if !w.Descending {
		i := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] >= w.Lo })
		for t := w.Lo; t <= w.Hi; t = r.Step(t, 1) {
			switch {
			case i < len(s.ts) && s.ts[i] == t:
				put(s.candle(i))
				i++
			case i > 0 || s.hasBefore:
				put(s.flat(t, i-1))
			}
		}
		return dst
	}
	// j is the last bucket at or before t: the one t's candle is, or the one it carries.
	j := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] > w.Hi }) - 1
	for t := w.Hi; t >= w.Lo; t = r.Step(t, -1) {
		switch {
		case j >= 0 && s.ts[j] == t:
			put(s.candle(j))
			j--
		case j >= 0 || s.hasBefore:
			put(s.flat(t, j))
		default:
			// Before the market's first trade: so is every earlier bucket.
			return dst
		}
	}
	return dst
}

// closes returns the closes of bucket i, or of the bucket before the series when i < 0.
func (s *hotSeries) closes(i int) (fill, oracle float64) {
	if i < 0 {
		return s.beforeFill, s.beforeOracle
	}
	return s.fillClose[i], s.oraClose[i]
}

// candle is bucket i's candle, as CandleOf makes it.
func (s *hotSeries) candle(i int) Candle {
	fo, oo := s.firstFill, s.firstOracle
	if i > 0 || s.hasBefore {
		fo, oo = s.closes(i - 1)
	}
	return Candle{
		Ts: s.ts[i], FillOpen: fo, FillHigh: max(s.fillHigh[i], fo), FillClose: s.fillClose[i], FillLow: min(s.fillLow[i], fo),
		OracleOpen: oo, OracleHigh: max(s.oracleHigh[i], oo), OracleClose: s.oraClose[i], OracleLow: min(s.oracleLow[i], oo),
		QuoteVolume: s.quote[i], BaseVolume: s.base[i],
	}
}

// flat is the empty bucket ts carrying the close of bucket i (i < 0: of the bucket before the series).
func (s *hotSeries) flat(ts int64, i int) Candle {
	f, o := s.closes(i)
	return Candle{Ts: ts, FillOpen: f, FillHigh: f, FillClose: f, FillLow: f, OracleOpen: o, OracleHigh: o, OracleClose: o, OracleLow: o}
}

func (s *hotSeries) setBefore(b *Bucket) {
	s.hasBefore = b != nil
	s.beforeFill, s.beforeOracle = 0, 0
	if b != nil {
		s.beforeFill, s.beforeOracle = b.FillClose, b.OracleClose
	}
}

// replace puts rows, ascending, in place of the buckets held in [lo, hi]. Stored buckets are never
// deleted, so rows hold every bucket held there and maybe new ones; a late fill's new bucket lands in
// the middle, a live one at the end.
func (s *hotSeries) replace(lo, hi int64, rows []Bucket) {
	a := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] >= lo })
	b := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] > hi })
	b = max(a, b)
	if a == 0 && len(rows) > 0 {
		s.firstFill, s.firstOracle = rows[0].FillFirst, rows[0].OracleFirst
	}
	if a == b && a == len(s.ts) {
		// The usual change: a new bucket, or none; nothing moves.
		for i := range rows {
			r := &rows[i]
			s.ts = append(s.ts, r.Ts)
			s.fillHigh, s.fillLow, s.fillClose = append(s.fillHigh, r.FillHigh), append(s.fillLow, r.FillLow), append(s.fillClose, r.FillClose)
			s.oracleHigh, s.oracleLow, s.oraClose = append(s.oracleHigh, r.OracleHigh), append(s.oracleLow, r.OracleLow), append(s.oraClose, r.OracleClose)
			s.quote, s.base = append(s.quote, r.QuoteVolume), append(s.base, r.BaseVolume)
		}
		return
	}
	col := func(f func(*Bucket) float64) []float64 {
		out := make([]float64, len(rows))
		for i := range rows {
			out[i] = f(&rows[i])
		}
		return out
	}
	ts := make([]int64, len(rows))
	for i := range rows {
		ts[i] = rows[i].Ts
	}
	s.ts = slices.Replace(s.ts, a, b, ts...)
	s.fillHigh = slices.Replace(s.fillHigh, a, b, col(func(r *Bucket) float64 { return r.FillHigh })...)
	s.fillLow = slices.Replace(s.fillLow, a, b, col(func(r *Bucket) float64 { return r.FillLow })...)
	s.fillClose = slices.Replace(s.fillClose, a, b, col(func(r *Bucket) float64 { return r.FillClose })...)
	s.oracleHigh = slices.Replace(s.oracleHigh, a, b, col(func(r *Bucket) float64 { return r.OracleHigh })...)
	s.oracleLow = slices.Replace(s.oracleLow, a, b, col(func(r *Bucket) float64 { return r.OracleLow })...)
	s.oraClose = slices.Replace(s.oraClose, a, b, col(func(r *Bucket) float64 { return r.OracleClose })...)
	s.quote = slices.Replace(s.quote, a, b, col(func(r *Bucket) float64 { return r.QuoteVolume })...)
	s.base = slices.Replace(s.base, a, b, col(func(r *Bucket) float64 { return r.BaseVolume })...)
}

// cut drops the first n buckets, in place: the columns' arrays are reused as the series moves on,
// so a series' memory stays what its range needs.
func (s *hotSeries) cut(n int) {
	s.ts = slices.Delete(s.ts, 0, n)
	for _, c := range s.columns() {
		*c = slices.Delete(*c, 0, n)
	}
}

// columns are the series' float columns, for what is done to each alike.
func (s *hotSeries) columns() []*[]float64 {
	return []*[]float64{&s.fillHigh, &s.fillLow, &s.fillClose, &s.oracleHigh, &s.oracleLow, &s.oraClose, &s.quote, &s.base}
}
