package market

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

	// textSize is the bytes of candle JSON the series keep (candleText), textBudget their bound.
	textSize   atomic.Int64
	textBudget int64
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
//
// Its columns are integers: prices and quote volumes in millionths, base volumes in billionths, the
// units the ingest computes them in, so that an answer writes their digits without a float's
// checks (appendFixed). A series holding a value that is not such a whole number (not written by
// this ingest) keeps each value's float64 bits instead (floats), and is written as any float is.
type hotSeries struct {
	mu     sync.RWMutex
	start  int64
	floats bool
	// before holds the closes of the last stored bucket before start (hasBefore), which open and carry
	// into the first buckets held.
	hasBefore                bool
	beforeFill, beforeOracle int64
	// firstFill and firstOracle are the first fills of ts[0]: its open when no bucket precedes it.
	firstFill, firstOracle int64

	ts                              []int64
	fillHigh, fillLow, fillClose    []int64
	oracleHigh, oracleLow, oraClose []int64
	quote, base                     []int64

	text *candleText
}

// NewHot keeps days of each resolution on the clock now. It answers nothing until SetReady.
func NewHot(days HotDays, now func() time.Time) *Hot {
	return &Hot{days: days, now: now, series: map[hotKey]*hotSeries{}, pending: map[int64]pendingTx{}, dirty: map[string]int{},
		textBudget: DefaultTextBudget}
}

// SetTextBudget bounds the candle JSON h keeps (TextBytes) to n bytes; at 0 or below it keeps none
// and writes every answer from the columns. It is set before h is used.
func (h *Hot) SetTextBudget(n int64) { h.textBudget = n }

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
	old := h.series
	h.series = map[hotKey]*hotSeries{}
	h.mu.Unlock()
	for _, s := range old {
		s.text.retire()
	}
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
	s := &hotSeries{start: start, text: newCandleText(res, &h.textSize)}
	s.setBefore(before)
	// Sized to what is loaded: appends for the live buckets grow it from there.
	n := len(stored)
	s.ts = make([]int64, 0, n)
	for _, c := range s.columns() {
		*c = make([]int64, 0, n)
	}
	s.replace(start, start-1, stored)
	h.mu.Lock()
	old := h.series[hotKey{symbol, res}]
	h.series[hotKey{symbol, res}] = s
	h.mu.Unlock()
	if old != nil {
		old.text.retire()
	}
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
				// The candles kept are unchanged (the first still opens at the same close), but a
				// chunk holding some of the buckets cut no longer lines up with the columns.
				s.text.drop(math.MinInt64, s.text.chunkOf(start-1))
			}
			s.start = start
		}
		s.mu.Unlock()
	}
}

// TextBytes is the bytes of candle JSON kept to answer from (at most the text budget, about).
func (h *Hot) TextBytes() int64 { return h.textSize.Load() }

// dropText forgets the candle JSON of every series: it is past its budget.
func (h *Hot) dropText() {
	h.mu.RLock()
	all := make([]*hotSeries, 0, len(h.series))
	for _, s := range h.series {
		all = append(all, s)
	}
	h.mu.RUnlock()
	for _, s := range all {
		s.text.dropAll()
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
	if w.Lo < s.start {
		s.mu.RUnlock()
		return dst, false
	}
	out = s.appendWindow(dst, res, w, h.textBudget > 0)
	s.mu.RUnlock()
	if h.textBudget > 0 && h.textSize.Load() > h.textBudget {
		h.dropText()
	}
	return out, true
}

// appendWindow lays out every bucket of w as Assemble does (traded buckets opening at the previous
// close, empty ones carrying it, none before the market's first trade) and appends each as it comes,
// in the window's order. w.Lo must not be before s.start.
func (s *hotSeries) appendWindow(dst []byte, r Resolution, w CandleWindow, keepText bool) []byte {
	if w.Hi < w.Lo {
		return dst
	}
	first := true
	sep := func() {
		if !first {
			dst = append(dst, ',')
		}
		first = false
	}
	text := textCursor{s: s}
	// A traded candle's JSON, from the kept chunks, or written from the columns when none are kept.
	candle := func(dst []byte, i int) []byte {
		if keepText {
			return append(dst, text.candle(i)...)
		}
		return s.appendCandle(dst, i)
	}
	carried := flats{of: -2}
	if !w.Descending {
		i := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] >= w.Lo })
		for t := w.Lo; t <= w.Hi; t = r.Step(t, 1) {
			switch {
			case i < len(s.ts) && s.ts[i] == t:
				sep()
				dst = candle(dst, i)
				i++
			case i > 0 || s.hasBefore:
				sep()
				dst = carried.append(dst, s, t, i-1)
			}
		}
		return dst
	}
	// j is the last bucket at or before t: the one t's candle is, or the one it carries.
	j := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] > w.Hi }) - 1
	for t := w.Hi; t >= w.Lo; t = r.Step(t, -1) {
		switch {
		case j >= 0 && s.ts[j] == t:
			sep()
			dst = candle(dst, j)
			j--
		case j >= 0 || s.hasBefore:
			sep()
			dst = carried.append(dst, s, t, j)
		default:
			// Before the market's first trade: so is every earlier bucket.
			return dst
		}
	}
	return dst
}

// closes returns the closes of bucket i, or of the bucket before the series when i < 0.
func (s *hotSeries) closes(i int) (fill, oracle int64) {
	if i < 0 {
		return s.beforeFill, s.beforeOracle
	}
	return s.fillClose[i], s.oraClose[i]
}

// appendCandle appends bucket i's candle, as CandleOf makes it.
func (s *hotSeries) appendCandle(dst []byte, i int) []byte {
	fo, oo := s.firstFill, s.firstOracle
	if i > 0 || s.hasBefore {
		fo, oo = s.closes(i - 1)
	}
	if s.floats {
		f := func(v int64) float64 { return math.Float64frombits(uint64(v)) }
		return appendCandle(dst, s.ts[i], f(fo), math.Max(f(s.fillHigh[i]), f(fo)), f(s.fillClose[i]), math.Min(f(s.fillLow[i]), f(fo)),
			f(oo), math.Max(f(s.oracleHigh[i]), f(oo)), f(s.oraClose[i]), math.Min(f(s.oracleLow[i]), f(oo)), f(s.quote[i]), f(s.base[i]))
	}
	// Whole millionths order as the floats they stand for do, so max and min pick the same bound.
	return appendCandleFixed(dst, s.ts[i], fo, max(s.fillHigh[i], fo), s.fillClose[i], min(s.fillLow[i], fo),
		oo, max(s.oracleHigh[i], oo), s.oraClose[i], min(s.oracleLow[i], oo), s.quote[i], s.base[i])
}

// appendFlat appends the empty bucket ts, carrying the close of bucket i (i < 0: of the bucket
// before the series), as flat makes it.
func (s *hotSeries) appendFlat(dst []byte, ts int64, i int) []byte {
	f, o := s.closes(i)
	if s.floats {
		ff, of := math.Float64frombits(uint64(f)), math.Float64frombits(uint64(o))
		return appendCandle(dst, ts, ff, ff, ff, ff, of, of, of, of, 0, 0)
	}
	return appendCandleFixed(dst, ts, f, f, f, f, o, o, o, o, 0, 0)
}

// flats writes the empty buckets of one answer. What follows an empty bucket's ts is the same for
// every bucket carrying the same closes, so it is written once and copied from there after.
type flats struct {
	of       int // the bucket whose closes the last empty bucket carried (-1: the one before the series)
	from, to int // where in the answer that bucket's JSON after its ts is
}

// append appends the empty bucket ts carrying the closes of bucket i, as appendFlat does.
func (f *flats) append(dst []byte, s *hotSeries, ts int64, i int) []byte {
	if i == f.of {
		dst = strconv.AppendInt(append(dst, `{"ts":`...), ts, 10)
		return append(dst, dst[f.from:f.to]...)
	}
	at := len(dst)
	dst = s.appendFlat(dst, ts, i)
	// The ts is digits: the first comma ends it.
	f.of, f.from, f.to = i, at+bytes.IndexByte(dst[at:], ','), len(dst)
	return dst
}

// admit makes sure the series can hold rows and before: a value that is not a whole number of its
// unit turns the series to floats.
func (s *hotSeries) admit(rows []Bucket, before *Bucket) {
	if s.floats {
		return
	}
	ok := func(v, scale float64) bool { _, ok := fixedOf(v, scale); return ok }
	if before != nil && !(ok(before.FillClose, 1e6) && ok(before.OracleClose, 1e6)) {
		s.toFloats()
		return
	}
	for i := range rows {
		r := &rows[i]
		for _, v := range [...]float64{r.FillFirst, r.FillHigh, r.FillLow, r.FillClose, r.OracleFirst, r.OracleHigh, r.OracleLow, r.OracleClose, r.QuoteVolume} {
			if !ok(v, 1e6) {
				s.toFloats()
				return
			}
		}
		if !ok(r.BaseVolume, 1e9) {
			s.toFloats()
			return
		}
	}
}

// toFloats turns every value held into its float64's bits.
func (s *hotSeries) toFloats() {
	bits := func(n int64, scale float64) int64 { return int64(math.Float64bits(float64(n) / scale)) }
	for _, c := range s.columns() {
		scale := 1e6
		if c == &s.base {
			scale = 1e9
		}
		for i, n := range *c {
			(*c)[i] = bits(n, scale)
		}
	}
	s.beforeFill, s.beforeOracle = bits(s.beforeFill, 1e6), bits(s.beforeOracle, 1e6)
	s.firstFill, s.firstOracle = bits(s.firstFill, 1e6), bits(s.firstOracle, 1e6)
	s.floats = true
	// The values are the same, so is their JSON; dropped anyway, for its making to need no proof.
	s.text.dropAll()
}

// value is v as the series holds it: whole units of scale, or the float's bits. admit has made sure
// it can.
func (s *hotSeries) value(v, scale float64) int64 {
	if s.floats {
		return int64(math.Float64bits(v))
	}
	n, _ := fixedOf(v, scale)
	return n
}

func (s *hotSeries) setBefore(b *Bucket) {
	s.hasBefore = b != nil
	s.beforeFill, s.beforeOracle = 0, 0
	if b != nil {
		s.admit(nil, b)
		s.beforeFill, s.beforeOracle = s.value(b.FillClose, 1e6), s.value(b.OracleClose, 1e6)
	}
}

// replace puts rows, ascending, in place of the buckets held in [lo, hi]. Stored buckets are never
// deleted, so rows hold every bucket held there and maybe new ones; a late fill's new bucket lands in
// the middle, a live one at the end.
func (s *hotSeries) replace(lo, hi int64, rows []Bucket) {
	s.admit(rows, nil)
	a := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] >= lo })
	b := sort.Search(len(s.ts), func(k int) bool { return s.ts[k] > hi })
	b = max(a, b)
	if a == 0 && len(rows) > 0 {
		s.firstFill, s.firstOracle = s.value(rows[0].FillFirst, 1e6), s.value(rows[0].OracleFirst, 1e6)
	}
	ts := make([]int64, len(rows))
	for i := range rows {
		ts[i] = rows[i].Ts
	}
	s.ts = slices.Replace(s.ts, a, b, ts...)
	col := func(c *[]int64, f func(*Bucket) float64, scale float64) {
		vals := make([]int64, len(rows))
		for i := range rows {
			vals[i] = s.value(f(&rows[i]), scale)
		}
		*c = slices.Replace(*c, a, b, vals...)
	}
	col(&s.fillHigh, func(r *Bucket) float64 { return r.FillHigh }, 1e6)
	col(&s.fillLow, func(r *Bucket) float64 { return r.FillLow }, 1e6)
	col(&s.fillClose, func(r *Bucket) float64 { return r.FillClose }, 1e6)
	col(&s.oracleHigh, func(r *Bucket) float64 { return r.OracleHigh }, 1e6)
	col(&s.oracleLow, func(r *Bucket) float64 { return r.OracleLow }, 1e6)
	col(&s.oraClose, func(r *Bucket) float64 { return r.OracleClose }, 1e6)
	col(&s.quote, func(r *Bucket) float64 { return r.QuoteVolume }, 1e6)
	col(&s.base, func(r *Bucket) float64 { return r.BaseVolume }, 1e9)
	// The candles of [lo, hi] changed, and so may have the one after them, which opens at the last
	// close before it (the first held, too, when lo is the start and before changed).
	last := hi
	if next := a + len(rows); next < len(s.ts) {
		last = max(last, s.ts[next])
	}
	s.text.drop(s.text.chunkOf(lo), s.text.chunkOf(last))
}

// cut drops the first n buckets, in place: the columns' arrays are reused as the series moves on,
// so a series' memory stays what its range needs.
func (s *hotSeries) cut(n int) {
	s.ts = slices.Delete(s.ts, 0, n)
	for _, c := range s.columns() {
		*c = slices.Delete(*c, 0, n)
	}
}

// columns are the series' value columns, for what is done to each alike.
func (s *hotSeries) columns() []*[]int64 {
	return []*[]int64{&s.fillHigh, &s.fillLow, &s.fillClose, &s.oracleHigh, &s.oracleLow, &s.oraClose, &s.quote, &s.base}
}
