// Package sim generates a realistic, deterministic stream of protocol events for a handful of perp,
// spot and prediction markets: fills with their orders and order actions, hourly funding, funding
// payments, deposits and rewards, swaps, settlements, liquidations, insurance-fund flows, LP records,
// market states, account snapshots, vaults and params.
//
// Every fill's taker order and, unless the AMM or OpenBook filled it, maker order has an order record
// and a place action before the fill; each fill carries both orders' cumulative amounts after it, and
// each order record the state its fills and actions leave (protocol.orders: the placement's ts, txSig
// and slot, the last action's lastUpdatedTs). Taker orders are market orders mostly, then limit
// orders and a few triggerMarket/triggerLimit orders (a trigger action before their first fill); some
// are filled by two or three fills seconds apart, some only partly, and some partly filled ones are
// then cancelled. Maker orders are post-only limit orders mostly: a JIT maker places its order in the
// fill's transaction, a resting order takes up to six fills, and some are cancelled partly filled.
// Besides, post-only orders are placed and cancelled without a fill, and market orders with a short
// maxTs expire unfilled (an expire action).
//
// Everything is a function of the seed and the event time: prices follow mean-reverting random walks
// laid out hour by hour from a fixed epoch, and each minute's events come from generators seeded by
// that minute. So the same seed yields byte-identical messages for a window no matter how the window
// is split into calls (as long as its parts come in order), ids keep increasing across runs (fill
// ids are contiguous per market within a run, see fillIDs; order ids are per account and fit the
// program's u32, see orderIDsPerMinute), and replaying a window yields duplicates the consumers'
// natural keys absorb. The package knows nothing of Kafka: messages go to a callback or a Writer.
package sim

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/tidemark/tidemark/platform/events"
)

// Epoch returns the simulated protocol's launch (2024-01-01 UTC): windows start at or after it.
func Epoch() time.Time { return time.Unix(epoch, 0).UTC() }

const (
	epoch     int64 = 1704067200  // 2024-01-01T00:00:00Z
	epochSlot int64 = 238_000_000 // chain slot at the epoch; slots advance 2.5 per second

	maxFillsPerMinute = 40000 // the highest fill rate a Config or Live's rate gets
)

// Config tunes the simulation. Zero values take the defaults of DefaultConfig.
type Config struct {
	Seed        int64
	Authorities int // wallets; each owns one or two subaccounts

	// FillsPerMinute is the mean fill rate over all markets; the other flows scale with it (orders and
	// order actions about 3 messages per fill, deposits 1 per 25 fills, settlements 1 per 20, ...).
	FillsPerMinute float64

	// MarketStateInterval is how often every market's AMM/oracle state is sampled: whole seconds,
	// default 30s; below a second, every slot (SlotInterval), as the chain makes them.
	MarketStateInterval time.Duration
	// LiveMarketStateInterval replaces MarketStateInterval once Live runs (0: it stays): per-slot
	// states live after a lighter backfill.
	LiveMarketStateInterval time.Duration
	SnapshotInterval        time.Duration // account snapshots, whole hours; default 1h

	// Now is the clock of Backfill and Live; default time.Now.
	Now func() time.Time
}

// DefaultConfig is a modest exchange: 300 wallets, 30 fills a minute.
func DefaultConfig() Config {
	return Config{
		Seed:                1,
		Authorities:         300,
		FillsPerMinute:      30,
		MarketStateInterval: 30 * time.Second,
		SnapshotInterval:    time.Hour,
		Now:                 time.Now,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Authorities < 2 {
		c.Authorities = d.Authorities
	}
	if c.FillsPerMinute <= 0 {
		c.FillsPerMinute = d.FillsPerMinute
	}
	c.FillsPerMinute = math.Min(c.FillsPerMinute, maxFillsPerMinute)
	c.MarketStateInterval = stateInterval(c.MarketStateInterval, d.MarketStateInterval)
	if c.LiveMarketStateInterval > 0 {
		c.LiveMarketStateInterval = stateInterval(c.LiveMarketStateInterval, d.MarketStateInterval)
	}
	if c.SnapshotInterval < time.Hour {
		c.SnapshotInterval = d.SnapshotInterval
	}
	c.SnapshotInterval = c.SnapshotInterval.Truncate(time.Hour)
	if c.Now == nil {
		c.Now = d.Now
	}
	return c
}

// SlotInterval is the chain's slot time: a MarketStateInterval below a second samples every slot.
const SlotInterval = 400 * time.Millisecond

// stateInterval is a market state interval as the generator takes it: def when unset, every slot
// when below a second, else whole seconds.
func stateInterval(v, def time.Duration) time.Duration {
	switch {
	case v <= 0:
		return def
	case v < time.Second:
		return SlotInterval
	}
	return v.Truncate(time.Second)
}

// Simulator generates events. It is not safe for concurrent use.
type Simulator struct {
	cfg     Config
	seed    uint64
	pop     *population
	markets []marketSpec
	paths   []*path

	announced bool  // NewUser records were emitted
	cursor    int64 // end of the last generated window (unix seconds), 0 if none

	cachedMinute int64
	minuteItems  []item
	sortBuf      []item
	cachedHour   int64
	hourItems    []item

	trades   tradeScratch // the fill planner's buffers
	fillIDs  fillIDs      // the next fillRecordId of every market
	orderIDs orderIDs     // the order ids the minute being generated gave
}

// fillIDs numbers fills per market without gaps, as the program does and as the indexer's gap
// detector (like the protocol's own archiver) checks. The ids are given as the fills are emitted,
// so that a minute generated again (Live regenerates the current minute when its flow changes)
// cannot number a fill twice or skip one. A run's count starts at the id the old time-derived
// scheme gave its first minute's first fill (minute*100000+1), so ids still rise from run to run;
// within a run they are contiguous. A window that starts before the previous one ended starts a
// new count.
type fillIDs struct {
	base int64                   // the id before a market's first fill of the run
	last map[events.Market]int64 // the last id per market
}

// start begins a run at start (unix seconds) unless a run continues from cursor.
func (f *fillIDs) start(start, cursor int64) {
	if f.last == nil || start < cursor {
		f.last = map[events.Market]int64{}
		f.base = (start - epoch) / 60 * idsPerMinute
	}
}

// next is the id of the market's next fill.
func (f *fillIDs) next(m events.Market) string {
	id, ok := f.last[m]
	if !ok {
		id = f.base
	}
	id++
	f.last[m] = id
	return strconv.FormatInt(id, 10)
}

// item is one record due at ts on topic.
type item struct {
	ts    int64
	topic string
	rec   events.Record
}

// New builds a simulator; its accounts and price paths depend only on cfg.
func New(cfg Config) *Simulator {
	cfg = cfg.withDefaults()
	s := &Simulator{
		cfg:          cfg,
		seed:         uint64(cfg.Seed),
		markets:      marketSpecs(),
		cachedMinute: -1,
		cachedHour:   -1,
	}
	for i := range s.markets {
		s.markets[i].pos = i
	}
	s.pop = newPopulation(s.seed, cfg.Authorities)
	for i, p := range pathSpecs() {
		s.paths = append(s.paths, newPath(s.seed, i, p))
	}
	return s
}

// Config returns the effective configuration.
func (s *Simulator) Config() Config { return s.cfg }

// Accounts lists the simulated subaccounts in a stable order.
func (s *Simulator) Accounts() []Account {
	out := make([]Account, len(s.pop.actors))
	for i, a := range s.pop.actors {
		out[i] = a.Account
	}
	return out
}

// WalletKey is the private key of a simulated wallet, an authority or a delegate: the simulator's
// wallets are ed25519 keys derived from its seed, so that the requests of make run's wallets can be
// signed (the signing tool, tools/cmd/notifysign). ok is false for an address that is no wallet of it.
func (s *Simulator) WalletKey(address string) (key ed25519.PrivateKey, ok bool) {
	seed, ok := s.pop.wallets[address]
	if !ok {
		return nil, false
	}
	return ed25519.NewKeyFromSeed(seed[:]), true
}

// Authorities lists the simulated wallets that own accounts, in a stable order.
func (s *Simulator) Authorities() []string { return slices.Clone(s.pop.authorities) }

// Generate calls emit with every message whose event time lies in [from, to) (whole seconds), in
// time order, each encoded with events.Encode. The first call on a Simulator starts with a NewUser
// record, stamped at from, for every account. An error from emit stops the generation and is
// returned as is. Windows lie between Epoch and 2032-03-01T14:47Z, when order ids would outgrow
// the program's u32.
func (s *Simulator) Generate(from, to time.Time, emit func(events.Message) error) error {
	return s.generate(from.Unix(), to.Unix(), func(_ int64, m events.Message) error { return emit(m) })
}

func (s *Simulator) generate(start, end int64, emit func(ts int64, m events.Message) error) error {
	if start < epoch {
		return fmt.Errorf("window start %s is before the simulator epoch %s",
			time.Unix(start, 0).UTC().Format(time.RFC3339), Epoch().Format(time.RFC3339))
	}
	if end <= start {
		return nil
	}
	if end > orderIDsEnd {
		return fmt.Errorf("window end %s is after %s, when the simulator's order ids outgrow the program's u32",
			time.Unix(end, 0).UTC().Format(time.RFC3339), time.Unix(orderIDsEnd, 0).UTC().Format(time.RFC3339))
	}
	s.fillIDs.start(start, s.cursor)
	send := func(it item) error {
		if o, ok := it.rec.(*events.Order); ok {
			it.rec = placement(o)
		}
		msg, err := events.Encode(it.topic, it.rec)
		if err != nil {
			return fmt.Errorf("simulator produced a bad %s record: %w", it.topic, err)
		}
		return emit(it.ts, msg)
	}
	if !s.announced {
		for _, it := range s.newUsers(start) {
			if err := send(it); err != nil {
				return err
			}
		}
		s.announced = true
	}
	for m := (start - epoch) / 60; epoch+m*60 < end; m++ {
		items := s.minute(m)
		for i := 0; i < len(items); {
			j := i + 1
			for j < len(items) && items[j].ts == items[i].ts {
				j++
			}
			second := items[i:j]
			i = j
			if ts := second[0].ts; ts < start {
				continue
			} else if ts >= end {
				break
			}
			// Fills are numbered in the chain's order of the second, emitted in the planned one.
			for _, k := range chainOrder(second) {
				if f, ok := second[k].rec.(*events.Fill); ok && second[k].topic == events.TopicFills {
					f.FillRecordID = s.fillIDs.next(events.Market{Index: f.MarketIndex, Symbol: f.Symbol, Type: f.MarketType})
				}
			}
			for _, it := range second {
				if err := send(it); err != nil {
					return err
				}
			}
		}
		s.cursor = min(end, epoch+(m+1)*60)
	}
	return nil
}

// minute returns the items of minute m (since the epoch) sorted by time; the last one is cached
// because Live asks for the current minute many times.
func (s *Simulator) minute(m int64) []item {
	if m == s.cachedMinute {
		return s.minuteItems
	}
	start := epoch + m*60
	g := &minuteGen{s: s, m: m, start: start, items: s.minuteItems[:0]}
	s.orderIDs.begin(m, s.cfg.FillsPerMinute, len(s.pop.actors))
	for _, it := range s.hour(m / 60) {
		if it.ts >= start && it.ts < start+60 {
			g.items = append(g.items, it)
		}
	}
	g.marketStates()
	g.fills()
	g.cancels()
	g.expires()
	g.deposits()
	g.swaps()
	g.settlements()
	g.perpLP()
	g.ifStakes()
	g.lpMintRedeem()
	g.liquidations()
	sorted := sortBySecond(g.items, start, s.sortBuf)
	s.sortBuf = g.items // free for the next minute's sort
	s.cachedMinute, s.minuteItems = m, sorted
	return sorted
}

// sortBySecond returns a minute's items ordered by time in dst's storage, items of the same second in
// the order they were added: a counting sort over the minute's seconds, as the flows keep their
// events inside their minute (a stable sort otherwise).
func sortBySecond(items []item, start int64, dst []item) []item {
	dst = slices.Grow(dst[:0], len(items))[:len(items)]
	var next [61]int
	for _, it := range items {
		sec := it.ts - start
		if sec < 0 || sec >= 60 {
			copy(dst, items)
			slices.SortStableFunc(dst, func(a, b item) int { return cmp.Compare(a.ts, b.ts) })
			return dst
		}
		next[sec+1]++
	}
	for i := 1; i < len(next); i++ {
		next[i] += next[i-1]
	}
	for _, it := range items {
		sec := it.ts - start
		dst[next[sec]] = it
		next[sec]++
	}
	return dst
}

// placement is an order's record as the chain gives it: the program emits an OrderRecord when the
// order is placed, so the record is the order at placement (open, nothing filled, no fee) and a
// consumer folds its actions and fills into it (services/user.Fold). The simulator plans each
// order whole, so its record says what the order became; this is that record before any of it.
func placement(o *events.Order) *events.Order {
	p := *o
	p.Status, p.LastActionStatus, p.LastActionExplanation = events.OrderStatusOpen, events.LastActionOpen, events.ExplanationNone
	p.BaseAssetAmountFilled, p.QuoteAssetAmountFilled, p.QuoteAssetAmount, p.CumulativeFee = "0", "0", "0", "0"
	p.LastUpdatedTs = p.Ts
	return &p
}

// chainOrder is the order the chain gives the records of one second (items, all of one ts): by
// slot, then transaction (in the order the simulator planned them, which is the order they happen
// in: a placement before its fill), then position in it. The simulator draws a record's slot
// within its second on its own, so this is not the order it plans records in; the program numbers
// a market's fills in this order, and an indexer reads them in it.
func chainOrder(items []item) []int {
	type key struct {
		slot       int64
		rank, path int // the transaction's first record in the second, the record's index in it
	}
	keys := make([]key, len(items))
	first := map[string]int{}
	for k, it := range items {
		r, ok := it.rec.(interface{ Transaction() events.Tx })
		if !ok {
			keys[k] = key{rank: k}
			continue
		}
		t := r.Transaction()
		rank, seen := first[t.TxSig]
		if !seen {
			rank = k
			first[t.TxSig] = k
		}
		keys[k] = key{slot: t.Slot, rank: rank, path: t.TxSigIndex}
	}
	idx := make([]int, len(items))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := keys[a], keys[b]
		return cmp.Or(cmp.Compare(x.slot, y.slot), cmp.Compare(x.rank, y.rank), cmp.Compare(x.path, y.path))
	})
	return idx
}

// hour returns the items planned per hour (funding, payments, IF records, snapshots, vaults,
// params) for hour h since the epoch.
func (s *Simulator) hour(h int64) []item {
	if h == s.cachedHour {
		return s.hourItems
	}
	g := &hourGen{s: s, h: h, start: epoch + h*3600, items: s.hourItems[:0]}
	g.params()
	g.fundingRates()
	g.fundingPayments()
	g.insuranceFund()
	g.vaults()
	g.snapshots()
	slices.SortStableFunc(g.items, func(a, b item) int { return cmp.Compare(a.ts, b.ts) })
	s.cachedHour, s.hourItems = h, g.items
	return g.items
}

func (s *Simulator) newUsers(ts int64) []item {
	rng := newRand(s.seed, streamNewUser, ts)
	out := make([]item, 0, len(s.pop.actors))
	for _, a := range s.pop.actors {
		nu := &events.NewUser{
			Tx: events.Tx{Ts: ts, TxSig: signature(rng), Slot: slotAt(ts)}, UserAuthority: a.Authority, User: a.User,
			SubAccountID: a.SubAccountID, Name: a.Name, Referrer: a.Referrer, Delegate: a.Delegate,
		}
		// The wallet's builder accounts ride on its first subaccount's record.
		if a.SubAccountID == 0 {
			nu.BuilderRevenueShareAccount, nu.RevenueShareEscrow = s.BuilderAccounts(a.Authority, ts)
		}
		out = append(out, item{ts: ts, topic: events.TopicNewUsers, rec: nu})
	}
	return out
}

// oracle is the market's oracle price in dollars at ts.
func (s *Simulator) oracle(spec *marketSpec, ts int64) float64 {
	if spec.path < 0 {
		return 1
	}
	off := ts - epoch
	return s.paths[spec.path].at(off/3600, off%3600)
}

// Generator streams: each flow draws from its own generator so that tuning one flow's rate leaves the
// others' events unchanged.
const (
	streamAccounts uint64 = iota + 1
	streamWalk
	streamBridge
	streamNewUser
	streamPosition
	streamFills
	streamCancels
	streamDeposits
	streamRewards
	streamSwaps
	streamSettle
	streamPerpLP
	streamIFStakes
	streamLPMint
	streamLiquidations
	streamMarketStates
	streamFunding
	streamPayments
	streamInsurance
	streamSnapshots
	streamVaults
	streamParams
	streamExpires
	streamBuilders
)

// newRand returns a generator for one stream and bucket (minute, hour, account, ...).
func newRand(seed, stream uint64, parts ...int64) *rand.Rand {
	h := splitmix(stream)
	for _, p := range parts {
		h = splitmix(h ^ uint64(p))
	}
	return rand.New(rand.NewPCG(seed, h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// slotAt is the chain slot at ts: 2.5 slots a second.
func slotAt(ts int64) int64 { return epochSlot + (ts-epoch)*5/2 }

// slotTime is the second slot falls in, the inverse of slotAt.
func slotTime(slot int64) int64 { return epoch + (slot-epochSlot)*2/5 }

// poisson draws an event count with mean lambda (normal approximation for large means).
func poisson(rng *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	if lambda > 50 {
		return max(0, int(math.Round(lambda+math.Sqrt(lambda)*rng.NormFloat64())))
	}
	limit, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= limit {
			return k
		}
		k++
	}
}

// mulDiv returns a*b/c for non-negative values, exact in 128 bits.
func mulDiv(a, b, c int64) int64 {
	if a < 0 || b < 0 || c <= 0 {
		panic(errors.New("mulDiv needs non-negative operands"))
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c))
	return int64(q)
}

// priceInt converts dollars to 1e6 precision, at least 1.
func priceInt(p float64) int64 { return max(1, int64(math.Round(p*events.PricePrecision))) }

// units converts a float amount in whole units to an integer amount with the given precision.
func units(v float64, precision float64) events.Amount {
	return events.NewAmount(int64(math.Round(v * precision)))
}
