package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/ingest"
	"github.com/tidemark/tidemark/platform/markets"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/notify"
)

// IngestConfig tunes what becomes a notification and what goes to the edge.
type IngestConfig struct {
	// FundingMinimum is the smallest funding payment (quote 1e6, either way) that is notified.
	FundingMinimum int64
	// EdgeWindow: notifications of events older than this are stored but not published to
	// edge.notifications; a backfill would flood the WebSocket edge with news of days ago.
	EdgeWindow time.Duration
}

// Ingest makes notifications of the topics the service consumes.
type Ingest struct {
	schema string
	cfg    IngestConfig
	now    func() time.Time
	q      tables

	notifications ingest.Table[row]
	pending       ingest.Table[pendingRow]

	mu    sync.Mutex
	names map[marketKey]string // the markets table, as far as it was read
}

type marketKey struct {
	typ   events.MarketType
	index int
}

// tables are the schema's quoted table names.
type tables struct {
	accounts, notifications, pending, preferences, devices, signatures string
	markets                                                            markets.Table
	marketsName                                                        string
}

func tablesOf(schema string) tables {
	q := func(t string) string { return pg.Table(schema, t) }
	return tables{accounts: q("accounts"), notifications: q("notifications"), pending: q("pending"),
		preferences: q("preferences"), devices: q("devices"), signatures: q("used_signatures"),
		markets: markets.In(schema), marketsName: q("markets")}
}

// NewIngest writes into schema; now is the clock of sentAt and of the edge window.
func NewIngest(schema string, cfg IngestConfig, now func() time.Time) *Ingest {
	return &Ingest{
		schema: schema, cfg: cfg, now: now, q: tablesOf(schema), names: map[marketKey]string{},
		notifications: ingest.Table[row]{
			Name: schema + ".notifications",
			Columns: []string{"notification_id", "authority", "source", "tx_sig", "tx_sig_index", "account", "type", "status",
				"push", "created_at", "sent_at", "record"},
			Key: []string{"authority", "source", "tx_sig", "tx_sig_index"},
			Row: func(r row) []any {
				n := r.draft.Notification
				return []any{n.ID, n.Authority, r.draft.Source, r.draft.TxSig, int32(r.draft.TxSigIndex), r.draft.Account, n.Type,
					n.Status, r.push, n.CreatedAt, n.SentAt, string(r.record)}
			},
		},
		pending: ingest.Table[pendingRow]{
			Name:    schema + ".pending",
			Columns: []string{"account", "source", "tx_sig", "tx_sig_index", "occurrence", "received_at"},
			Key:     []string{"account", "source", "tx_sig", "tx_sig_index"},
			Row: func(p pendingRow) []any {
				o := p.occ
				return []any{o.Account, o.Source, o.TxSig, int32(o.TxSigIndex), string(p.json), p.receivedAt}
			},
		},
	}
}

// row is a notification ready to store: its draft delivered (status, channels, sentAt) and the
// object encoded.
type row struct {
	draft  notify.Draft
	record []byte
	push   string
}

type pendingRow struct {
	occ        notify.Occurrence
	json       []byte
	receivedAt int64
}

// item is what one message gives: the occurrences of its event and the market it names.
type item struct {
	occs   []notify.Occurrence
	market *events.Market
}

// Sinks returns one sink per consumed topic. The occurrences of an event are made as it is
// decoded, beside the writers.
func (in *Ingest) Sinks() []ingest.Sink {
	return []ingest.Sink{
		ingest.Records(events.TopicNewUsers, in.writeNewUsers),
		ingest.Prepared(events.TopicFills, func(e ingest.Event[*events.Fill]) (item, error) {
			f := e.Record
			return item{occs: notify.FillOccurrences(f), market: &events.Market{Index: f.MarketIndex, Symbol: f.Symbol, Type: f.MarketType}}, nil
		}, in.writeItems),
		ingest.Prepared(events.TopicLiquidations, func(e ingest.Event[*events.Liquidation]) (item, error) {
			return item{occs: []notify.Occurrence{notify.LiquidationOccurrence(e.Record)}}, nil
		}, in.writeItems),
		ingest.Prepared(events.TopicDeposits, func(e ingest.Event[*events.Deposit]) (item, error) {
			d := e.Record
			return item{occs: []notify.Occurrence{notify.DepositOccurrence(d)},
				market: &events.Market{Index: d.MarketIndex, Symbol: d.Symbol, Type: events.MarketTypeSpot}}, nil
		}, in.writeItems),
		ingest.Prepared(events.TopicSettlePnl, func(e ingest.Event[*events.SettlePnl]) (item, error) {
			o, ok := notify.SettlePnlOccurrence(e.Record)
			if !ok {
				return item{}, nil
			}
			return item{occs: []notify.Occurrence{o}}, nil
		}, in.writeItems),
		ingest.Prepared(events.TopicFundingPayments, func(e ingest.Event[*events.FundingPayment]) (item, error) {
			o, ok := notify.FundingOccurrence(e.Record, in.cfg.FundingMinimum)
			if !ok {
				return item{}, nil
			}
			return item{occs: []notify.Occurrence{o}}, nil
		}, in.writeItems),
	}
}

func (in *Ingest) writeItems(ctx context.Context, tx pgx.Tx, items []item) error {
	ms := map[string]events.Market{}
	var occs []notify.Occurrence
	for _, it := range items {
		if it.market != nil && it.market.Symbol != "" {
			ms[it.market.Symbol] = *it.market
		}
		occs = append(occs, it.occs...)
	}
	if err := in.q.markets.Save(ctx, tx, ms); err != nil {
		return err
	}
	return in.deliver(ctx, tx, occs)
}

// writeNewUsers records each account's owner, name and delegate (the newest record of an account
// wins), then delivers what was waiting for these accounts.
func (in *Ingest) writeNewUsers(ctx context.Context, tx pgx.Tx, evs []ingest.Event[*events.NewUser]) error {
	newest := map[string]*events.NewUser{}
	for _, e := range evs {
		r := e.Record
		if cur, ok := newest[r.User]; !ok || r.Slot >= cur.Slot {
			newest[r.User] = r
		}
	}
	// In account order: writers of other partitions may upsert the same accounts at once.
	accounts := slices.Sorted(maps.Keys(newest))
	if err := in.lockAccounts(ctx, tx, accounts); err != nil {
		return err
	}
	auth, sub, name, delegate, slot := make([]string, 0, len(accounts)), make([]int32, 0, len(accounts)),
		make([]string, 0, len(accounts)), make([]*string, 0, len(accounts)), make([]int64, 0, len(accounts))
	for _, a := range accounts {
		r := newest[a]
		var d *string
		if r.Delegate != "" {
			d = &r.Delegate
		}
		auth, sub, name, delegate, slot = append(auth, r.UserAuthority), append(sub, int32(r.SubAccountID)),
			append(name, r.Name), append(delegate, d), append(slot, r.Slot)
	}
	_, err := tx.Exec(ctx, `INSERT INTO `+in.q.accounts+` (account, authority, sub_account_id, name, delegate, slot)
		SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::bigint[])
		ON CONFLICT (account) DO UPDATE SET authority = excluded.authority, sub_account_id = excluded.sub_account_id,
			name = excluded.name, delegate = excluded.delegate, slot = excluded.slot
		WHERE `+in.q.accounts+`.slot <= excluded.slot`, accounts, auth, sub, name, delegate, slot)
	if err != nil {
		return fmt.Errorf("record accounts: %w", err)
	}
	occs, err := in.takePending(ctx, tx, `DELETE FROM `+in.q.pending+` WHERE account = ANY($1) RETURNING occurrence`, accounts)
	if err != nil {
		return err
	}
	return in.deliver(ctx, tx, occs)
}

// takePending runs query, a DELETE of pending rows returning their occurrence, and decodes them.
func (in *Ingest) takePending(ctx context.Context, tx pgx.Tx, query string, args ...any) ([]notify.Occurrence, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("take pending occurrences: %w", err)
	}
	occs, err := pgx.CollectRows(rows, pgx.RowTo[notify.Occurrence]) // pgx decodes the json column
	if err != nil {
		return nil, fmt.Errorf("take pending occurrences: %w", err)
	}
	// Sorted, so that the notifications of one batch are stored in one order whoever delivers them.
	slices.SortFunc(occs, func(a, b notify.Occurrence) int {
		return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(a.TxSig, b.TxSig), cmp.Compare(a.TxSigIndex, b.TxSigIndex),
			cmp.Compare(a.Source, b.Source), cmp.Compare(a.Account, b.Account))
	})
	return occs, nil
}

// deliver turns occurrences into notifications for the wallets of their accounts, within tx: the
// new ones are stored and, when recent, queued for edge.notifications; an occurrence of an account
// no new-user record named yet waits in pending.
func (in *Ingest) deliver(ctx context.Context, tx pgx.Tx, occs []notify.Occurrence) error {
	if len(occs) == 0 {
		return nil
	}
	owners, err := in.owners(ctx, tx, occs)
	if err != nil {
		return err
	}
	if unknown := unknownAccounts(occs, owners); len(unknown) > 0 {
		// The new-user record of such an account may be committing in another writer's transaction
		// now: that one would find no pending row of this occurrence, and this one no owner, and the
		// occurrence would wait for good. The account's lock, which writeNewUsers takes as well, puts
		// the two in turn, and owners read after it see what the other committed.
		if err := in.lockAccounts(ctx, tx, unknown); err != nil {
			return err
		}
		late, err := in.ownersOf(ctx, tx, unknown)
		if err != nil {
			return err
		}
		maps.Copy(owners, late)
	}
	names, err := in.marketNames(ctx, tx, occs)
	if err != nil {
		return err
	}
	now := in.now().Unix()
	var drafts []notify.Draft
	var waiting []pendingRow
	for _, o := range occs {
		owner, ok := owners[o.Account]
		if !ok {
			b, err := json.Marshal(o)
			if err != nil {
				return fmt.Errorf("encode an occurrence: %w", err)
			}
			waiting = append(waiting, pendingRow{occ: o, json: b, receivedAt: now})
			continue
		}
		d, err := notify.Render(o, owner, names)
		if err != nil {
			return err
		}
		drafts = append(drafts, d)
	}
	if _, err := in.pending.Insert(ctx, tx, waiting); err != nil {
		return fmt.Errorf("keep occurrences of unknown accounts: %w", err)
	}
	if len(drafts) == 0 {
		return nil
	}
	rows, err := in.delivered(ctx, tx, drafts, now)
	if err != nil {
		return err
	}
	stored, err := in.notifications.Insert(ctx, tx, rows)
	if err != nil {
		return fmt.Errorf("store notifications: %w", err)
	}
	cutoff := in.now().Add(-in.cfg.EdgeWindow).Unix()
	var msgs []events.Message
	for _, r := range stored {
		if r.draft.CreatedAt < cutoff {
			continue
		}
		msgs = append(msgs, EdgeMessage(r.draft.Authority, r.record))
	}
	if err := outbox.Add(ctx, tx, in.schema, msgs...); err != nil {
		return fmt.Errorf("queue notifications for the edge: %w", err)
	}
	return nil
}

// EdgeMessage is the edge.notifications message of a new notification of authority: keyed by the
// wallet, its value record, the object as the feed serves it. It is of the wallet's channel, so the
// outbox numbers it there: the wallet's notifications come from batches of many partitions, which
// the counter row's lock puts in commit order.
func EdgeMessage(authority string, record []byte) events.Message {
	return events.Message{
		Topic: events.TopicEdgeNotifications, Key: []byte(authority), Value: record,
		Headers: map[string]string{events.HeaderEventType: "notification", events.HeaderSchemaVersion: events.SchemaVersion,
			events.HeaderEdgeChannel: events.NotificationsChannel(authority)},
	}
}

// owners reads the owners of the occurrences' accounts.
func (in *Ingest) owners(ctx context.Context, tx pgx.Tx, occs []notify.Occurrence) (map[string]notify.Owner, error) {
	set := map[string]bool{}
	for _, o := range occs {
		set[o.Account] = true
	}
	return in.ownersOf(ctx, tx, slices.Collect(maps.Keys(set)))
}

// unknownAccounts are the accounts of occs that owners lacks, sorted, each once.
func unknownAccounts(occs []notify.Occurrence, owners map[string]notify.Owner) []string {
	var out []string
	for _, o := range occs {
		if _, ok := owners[o.Account]; !ok {
			out = append(out, o.Account)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lockAccounts takes, until tx ends, the lock of each account (sorted: in one order in every
// transaction) that orders a new-user record and the occurrences waiting for it.
func (in *Ingest) lockAccounts(ctx context.Context, tx pgx.Tx, sorted []string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || a, 0)) FROM unnest($2::text[]) AS a`,
		in.schema+".account:", sorted); err != nil {
		return fmt.Errorf("lock accounts: %w", err)
	}
	return nil
}

// ownersOf reads the owners of accounts.
func (in *Ingest) ownersOf(ctx context.Context, tx pgx.Tx, accounts []string) (map[string]notify.Owner, error) {
	rows, err := tx.Query(ctx, `SELECT account, authority, sub_account_id, name FROM `+in.q.accounts+` WHERE account = ANY($1)`,
		accounts)
	if err != nil {
		return nil, fmt.Errorf("read account owners: %w", err)
	}
	out := map[string]notify.Owner{}
	var account string
	var o notify.Owner
	_, err = pgx.ForEachRow(rows, []any{&account, &o.Authority, &o.SubAccountID, &o.Name}, func() error {
		out[account] = o
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read account owners: %w", err)
	}
	return out, nil
}

// marketNames resolves the markets occurrences name by index only; the markets table is read again
// (within tx, so with this batch's markets) when one is not known yet.
func (in *Ingest) marketNames(ctx context.Context, tx pgx.Tx, occs []notify.Occurrence) (notify.MarketNames, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	missing := false
	for _, o := range occs {
		if o.MarketIndex != nil && o.Symbol == "" {
			if _, ok := in.names[marketKey{o.MarketType, *o.MarketIndex}]; !ok {
				missing = true
				break
			}
		}
	}
	if missing {
		rows, err := tx.Query(ctx, `SELECT market_type, market_index, symbol FROM `+in.q.marketsName)
		if err != nil {
			return nil, fmt.Errorf("read markets: %w", err)
		}
		var k marketKey
		var sym string
		_, err = pgx.ForEachRow(rows, []any{&k.typ, &k.index, &sym}, func() error {
			in.names[k] = sym
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read markets: %w", err)
		}
	}
	names := maps.Clone(in.names)
	return func(t events.MarketType, index int) string { return names[marketKey{t, index}] }, nil
}

// delivered decides the delivery of drafts: on the app channel now (SENT at now), and by push
// unless the wallet opted out of the type or has no device.
func (in *Ingest) delivered(ctx context.Context, tx pgx.Tx, drafts []notify.Draft, now int64) ([]row, error) {
	set := map[string]bool{}
	for _, d := range drafts {
		set[d.Authority] = true
	}
	rows, err := tx.Query(ctx, `SELECT a.authority, coalesce(p.push_opt_out, '{}'),
			EXISTS (SELECT 1 FROM `+in.q.devices+` d WHERE d.authority = a.authority)
		FROM unnest($1::text[]) AS a(authority) LEFT JOIN `+in.q.preferences+` p ON p.authority = a.authority`,
		slices.Collect(maps.Keys(set)))
	if err != nil {
		return nil, fmt.Errorf("read delivery preferences: %w", err)
	}
	type delivery struct {
		optOut  []string
		devices bool
	}
	wallets := map[string]delivery{}
	var authority string
	var d delivery
	_, err = pgx.ForEachRow(rows, []any{&authority, &d.optOut, &d.devices}, func() error {
		wallets[authority] = d
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read delivery preferences: %w", err)
	}
	out := make([]row, 0, len(drafts))
	for _, dr := range drafts {
		w := wallets[dr.Authority]
		push := notify.PushQueued
		if !w.devices || slices.Contains(w.optOut, dr.Type) {
			push = notify.PushSkipped
		}
		dr.Status, dr.Channels, dr.SentAt = notify.StatusSent, notify.Channels(push), now
		record, err := notify.Encode(dr.Notification)
		if err != nil {
			return nil, fmt.Errorf("encode notification %s: %w", dr.ID, err)
		}
		out = append(out, row{draft: dr, record: record, push: push})
	}
	return out, nil
}
