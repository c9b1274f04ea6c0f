package sim

import (
	"crypto/ed25519"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"

	"github.com/tidemark/tidemark/platform/chain/records"
	"github.com/tidemark/tidemark/platform/chain/solana"
	"github.com/tidemark/tidemark/platform/events"
)

// Account is a simulated subaccount and the wallet that owns it.
type Account struct {
	Authority    string
	User         string // the subaccount's public key (accountId)
	SubAccountID int
	Name         string
	Referrer     string // referrer's authority, "" if none
	Delegate     string // "" if none
}

// BuilderAccounts are the builder revenue share account and the revenue share escrow of the wallet
// authority as they stand at ts, nil where it has none: its NewUser records carry them.
func (s *Simulator) BuilderAccounts(authority string, ts int64) (*events.BuilderAccount, *events.RevenueShareEscrow) {
	var b *events.BuilderAccount
	if bu, ok := s.pop.builders[authority]; ok {
		b = &events.BuilderAccount{AccountID: bu.account, TotalBuilderRewards: units(bu.perDay*max(0, days(ts)), events.QuotePrecision)}
	}
	var e *events.RevenueShareEscrow
	if es, ok := s.pop.escrows[authority]; ok {
		e = &events.RevenueShareEscrow{AccountID: es.account, ApprovedBuilders: slices.Clone(es.approved)}
	}
	return b, e
}

// actor is an Account with the simulator's knobs for it.
type actor struct {
	Account
	index    int
	weight   float64 // relative trading activity
	maker    bool    // market maker: quotes most fills
	inVault  int     // vault index the account deposits into, -1 if none
	lpShares bool    // provides perp AMM liquidity
}

// population is everything keyed by the seed: accounts, bots, vaults.
type population struct {
	actors      []actor
	cumWeight   []float64           // prefix sums of actor weights, for weighted picks
	makers      []int               // actor indexes of market makers
	authIndex   map[string][]int    // authority -> its actors
	authorities []string            // in creation order
	wallets     map[string][32]byte // authority or delegate -> the ed25519 seed of its key
	referees    map[string][]string // referrer authority -> referred authorities
	fillers     []string            // keeper bots that fill orders
	liquidators []string
	vaults      []vault
	lpPool      string
	builders    map[string]builder // authority -> its builder revenue share account
	escrows     map[string]escrow  // authority -> its revenue share escrow
}

// builder is a wallet that routes orders for others and earns fees on them.
type builder struct {
	account string
	perDay  float64 // dollars of fees a day
}

// escrow is a wallet's revenue share escrow and the builders it approved.
type escrow struct {
	account  string
	approved []events.ApprovedBuilder
}

type vault struct {
	key, name, manager string
	spotMarket         int
	size               float64 // dollars
}

// base58 alphabet of Solana keys and signatures.
const b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58 encodes b (big-endian) without leading-zero handling: callers set a high top byte so the
// length is fixed (32 bytes -> 44 chars, 64 bytes -> 88 chars). It divides 32-bit limbs by 58^5 to
// take five digits per pass.
func base58(b []byte) string {
	const chunk = 58 * 58 * 58 * 58 * 58
	limbs := make([]uint32, (len(b)+3)/4)
	for i, v := range b {
		pos := len(b) - 1 - i // byte position from the least significant end
		limbs[len(limbs)-1-pos/4] |= uint32(v) << (8 * (pos % 4))
	}
	out := make([]byte, 0, len(b)*138/100+5)
	for start := 0; start < len(limbs); {
		var rem uint64
		for i := start; i < len(limbs); i++ {
			cur := rem<<32 | uint64(limbs[i])
			limbs[i] = uint32(cur / chunk)
			rem = cur % chunk
		}
		for start < len(limbs) && limbs[start] == 0 {
			start++
		}
		for range 5 {
			out = append(out, b58[rem%58])
			rem /= 58
		}
	}
	for len(out) > 1 && out[len(out)-1] == b58[0] { // zero digits above the number
		out = out[:len(out)-1]
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return string(out)
}

// pubkey draws a 44-character base58 public key.
func pubkey(rng *rand.Rand) string {
	var b [32]byte
	fill(rng, b[:])
	b[0] |= 0x10 // >= 2^252 > 58^43: always 44 characters
	return base58(b[:])
}

// wallet draws a wallet: an ed25519 key from 32 drawn bytes (the draws pubkey makes), so that
// requests of the simulated wallets can be signed; it returns the address and the key's seed.
func wallet(rng *rand.Rand) (string, [32]byte) {
	var seed [32]byte
	fill(rng, seed[:])
	pub := ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey)
	return events.EncodeBase58(pub), seed
}

// signature draws an 88-character base58 transaction signature. One is drawn for every transaction,
// so rather than encoding 64 random bytes it draws the digits: a first digit of 2..4 and 87 free
// ones make a number in [2*58^87, 5*58^87), inside [2^510, 2^512), so the string still decodes to 64
// bytes.
func signature(rng *rand.Rand) string {
	var b [88]byte
	b[0] = b58[2+rng.IntN(3)]
	for i := 1; i < len(b); i += 9 {
		// 58^9 divides 2^64 into about 2500 whole runs: nine digits of a draw are uniform to 2^-11.
		v := rng.Uint64()
		for j := i; j < min(i+9, len(b)); j++ {
			b[j] = b58[v%58]
			v /= 58
		}
	}
	return string(b[:])
}

func fill(rng *rand.Rand, b []byte) {
	for i := 0; i < len(b); i += 8 {
		v := rng.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

func newPopulation(seed uint64, authorities int) *population {
	rng := newRand(seed, streamAccounts, 0)
	p := &population{authIndex: map[string][]int{}, referees: map[string][]string{}, wallets: map[string][32]byte{}}
	for a := 0; a < authorities; a++ {
		auth, seed := wallet(rng)
		p.wallets[auth] = seed
		p.authorities = append(p.authorities, auth)
		subs := 1
		if rng.Float64() < 0.35 {
			subs = 2
		}
		referrer := ""
		if a > 10 && rng.Float64() < 0.15 {
			referrer = p.authorities[rng.IntN(10)] // a few early wallets refer most users
			p.referees[referrer] = append(p.referees[referrer], auth)
		}
		delegate := ""
		if rng.Float64() < 0.1 {
			var seed [32]byte
			delegate, seed = wallet(rng)
			p.wallets[delegate] = seed
		}
		// Activity is heavy-tailed: a few wallets trade most of the volume.
		weight := math.Exp(1.2 * rng.NormFloat64())
		maker := a < max(3, authorities/30)
		for s := 0; s < subs; s++ {
			name := "Main Account"
			if s > 0 {
				name = "Subaccount " + strconv.Itoa(s)
			}
			act := actor{
				Account: Account{Authority: auth, User: pubkey(rng), SubAccountID: s, Name: name,
					Referrer: referrer, Delegate: delegate},
				index: len(p.actors), weight: weight, maker: maker && s == 0, inVault: -1,
			}
			if maker && s == 0 {
				act.weight *= 3
			}
			if rng.Float64() < 0.1 {
				act.inVault = rng.IntN(3)
			}
			act.lpShares = rng.Float64() < 0.05
			if act.maker {
				p.makers = append(p.makers, act.index)
			}
			p.authIndex[auth] = append(p.authIndex[auth], act.index)
			p.actors = append(p.actors, act)
		}
	}
	total := 0.0
	for _, a := range p.actors {
		total += a.weight
		p.cumWeight = append(p.cumWeight, total)
	}
	for i := 0; i < 4; i++ {
		p.fillers = append(p.fillers, pubkey(rng))
	}
	for i := 0; i < 3; i++ {
		p.liquidators = append(p.liquidators, pubkey(rng))
	}
	for i, name := range []string{"Supercharger", "Delta Neutral SOL", "JLP Hedge"} {
		p.vaults = append(p.vaults, vault{key: pubkey(rng), name: name, manager: pubkey(rng),
			spotMarket: []int{0, 1, 0}[i], size: []float64{4e6, 1.5e6, 8e5}[i]})
	}
	p.lpPool = pubkey(rng)
	p.builderAccounts(seed)
	return p
}

// builderAccounts makes a few wallets builders and gives some others an escrow approving one to three
// of them, some none yet. It draws from a stream of its own, so the rest of the population is as it
// was before builders existed.
func (p *population) builderAccounts(seed uint64) {
	rng := newRand(seed, streamBuilders, 0)
	p.builders, p.escrows = map[string]builder{}, map[string]escrow{}
	var builders []string
	for i, auth := range p.authorities {
		if rng.Float64() < 0.03 || (i > 0 && i <= 2) { // wallets 1 and 2 always: every population has builders
			_ = pubkey(rng) // the draw of the account's old random address, kept so later draws stay as they were
			p.builders[auth] = builder{account: revenueShareAddress(auth, records.RevenueShareAddress), perDay: 20 + 400*rng.Float64()}
			builders = append(builders, auth)
		}
	}
	fees := []int{10, 25, 50, 100, 250}
	for i, auth := range p.authorities {
		if _, ok := p.builders[auth]; ok || !(rng.Float64() < 0.12 || i == 3) { // wallet 3 always has one
			continue
		}
		_ = pubkey(rng)
		e := escrow{account: revenueShareAddress(auth, records.RevenueShareEscrowAddress), approved: []events.ApprovedBuilder{}}
		if rng.Float64() >= 0.1 {
			for _, k := range rng.Perm(len(builders))[:1+rng.IntN(min(3, len(builders)))] {
				e.approved = append(e.approved, events.ApprovedBuilder{Authority: builders[k], MaxFeeTenthBps: fees[rng.IntN(len(fees))]})
			}
		}
		p.escrows[auth] = e
	}
}

// revenueShareAddress is a wallet's builder account at the PDA the program keeps it at (pda, of
// the wallet), so that a reader of the chain finds it where the records say it is.
func revenueShareAddress(authority string, pda func(solana.PublicKey) solana.PublicKey) string {
	return pda(solana.MustPublicKey(authority)).String()
}

// pick draws an actor with probability proportional to its activity.
func (p *population) pick(rng *rand.Rand) *actor {
	x := rng.Float64() * p.cumWeight[len(p.cumWeight)-1]
	i := sort.SearchFloat64s(p.cumWeight, x)
	if i >= len(p.actors) {
		i = len(p.actors) - 1
	}
	return &p.actors[i]
}

// counterparty draws a maker for taker: usually a market maker, otherwise any other account.
func (p *population) counterparty(rng *rand.Rand, taker *actor) *actor {
	for range 8 {
		var c *actor
		if rng.Float64() < 0.8 {
			c = &p.actors[p.makers[rng.IntN(len(p.makers))]]
		} else {
			c = p.pick(rng)
		}
		if c.User != taker.User {
			return c
		}
	}
	// Only reachable with a single account; pick the neighbour.
	return &p.actors[(taker.index+1)%len(p.actors)]
}
