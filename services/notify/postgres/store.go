// Package postgres is the notify service's storage: its schema, the ingest sinks that make
// notifications of the protocol's events, the store the routes read and change, and the record of
// used signatures. It never imports HTTP: it returns fault errors.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/outbox"
	"github.com/tidemark/tidemark/platform/pg"
	"github.com/tidemark/tidemark/services/notify"
)

// Store reads and changes the notify schema: it is the notify.Store, and the verifier's
// notify.Signatures and notify.Accounts.
type Store struct {
	pg.DB
	q    tables
	sigs *signatureRecorder
}

// NewStore works on schema through pool.
func NewStore(pool *pgxpool.Pool, schema string) *Store {
	q := tablesOf(schema)
	return &Store{DB: pg.DB{Pool: pool, Schema: schema}, q: q, sigs: &signatureRecorder{pool: pool, table: q.signatures}}
}

// EdgeSeq returns the seq of the last edge.notifications message queued for authority's channel
// (0: none yet): the outbox numbers them in the transaction that stores the notification, so a
// committed notification is counted and one of a transaction still open is not.
func (s *Store) EdgeSeq(ctx context.Context, authority string) (int64, error) {
	return outbox.Seq(ctx, s.Pool, s.Schema, events.NotificationsChannel(authority))
}

var (
	_ notify.Store      = (*Store)(nil)
	_ notify.Signatures = (*Store)(nil)
	_ notify.Accounts   = (*Store)(nil)
)

// Feed calls each for up to limit notifications of authority with status, newest first.
func (s *Store) Feed(ctx context.Context, authority, status string, after *notify.FeedCursor, limit int,
	each func(place notify.FeedCursor, record []byte) error) error {
	// The id is read as text under another name: an output column named notification_id would be
	// what ORDER BY notification_id sorts, text rather than the indexed uuid.
	q := `SELECT created_at, notification_id::text AS id, record FROM ` + s.q.notifications + ` WHERE authority = $1 AND status = $2`
	args := []any{authority, status, limit}
	if after != nil {
		q += ` AND (created_at, notification_id) < ($4, $5::uuid)`
		args = append(args, after.CreatedAt, after.ID)
	}
	q += ` ORDER BY created_at DESC, notification_id DESC LIMIT $3`
	rows, err := s.Pool.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read the feed: %w", err)
	}
	defer rows.Close()
	var place notify.FeedCursor
	for rows.Next() {
		// The record is passed in the driver's buffer: scanned, pgx would copy every record (into a
		// json.RawMessage, json.Unmarshal it too) for a page that only concatenates them.
		if err := rows.Scan(&place.CreatedAt, &place.ID, nil); err != nil {
			return fmt.Errorf("read the feed: %w", err)
		}
		if err := each(place, rows.RawValues()[2]); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the feed: %w", err)
	}
	return nil
}

// MarkRead marks authority's notification id READ and returns it; marking it again keeps the first
// time it was read.
func (s *Store) MarkRead(ctx context.Context, authority, id string, now int64) (notify.Notification, error) {
	var n notify.Notification
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		var record []byte
		var status string
		err := tx.QueryRow(ctx, `SELECT status, record FROM `+s.q.notifications+`
			WHERE authority = $1 AND notification_id = $2::uuid FOR UPDATE`, authority, id).Scan(&status, &record)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Errorf(fault.NotFound, "notification %s not found", id)
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(record, &n); err != nil {
			return fmt.Errorf("decode notification %s: %w", id, err)
		}
		if status == notify.StatusRead {
			return nil
		}
		n.Status = notify.StatusRead
		if record, err = notify.Encode(n); err != nil {
			return fmt.Errorf("encode notification %s: %w", id, err)
		}
		_, err = tx.Exec(ctx, `UPDATE `+s.q.notifications+` SET status = 'READ', read_at = $3, record = $4
			WHERE authority = $1 AND notification_id = $2::uuid`, authority, id, now, string(record))
		return err
	})
	if err != nil && fault.CodeOf(err) != fault.NotFound {
		err = fmt.Errorf("mark notification %s read: %w", id, err)
	}
	return n, err
}

// Preferences returns authority's preferences; a wallet that set none opted out of nothing.
func (s *Store) Preferences(ctx context.Context, authority string) (notify.Preferences, error) {
	p := notify.Preferences{PushOptOutTypes: []string{}}
	err := s.Pool.QueryRow(ctx, `SELECT push_opt_out FROM `+s.q.preferences+` WHERE authority = $1`, authority).Scan(&p.PushOptOutTypes)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return p, fmt.Errorf("read preferences: %w", err)
	}
	return p, nil
}

// SetPreferences replaces authority's preferences.
func (s *Store) SetPreferences(ctx context.Context, authority string, p notify.Preferences, now int64) error {
	_, err := s.Pool.Exec(ctx, `INSERT INTO `+s.q.preferences+` (authority, push_opt_out, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (authority) DO UPDATE SET push_opt_out = excluded.push_opt_out, updated_at = excluded.updated_at`,
		authority, p.PushOptOutTypes, now)
	if err != nil {
		return fmt.Errorf("store preferences: %w", err)
	}
	return nil
}

const deviceColumns = `device_id, platform, created_at, updated_at`

func scanDevice(row pgx.Row) (notify.Device, error) {
	var d notify.Device
	err := row.Scan(&d.DeviceID, &d.Platform, &d.CreatedAt, &d.UpdatedAt)
	return d, err
}

// RegisterDevice adds or updates authority's device; a wallet keeps at most notify.MaxDevices.
func (s *Store) RegisterDevice(ctx context.Context, authority string, r notify.Registration, now int64) (notify.Device, error) {
	var d notify.Device
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		// Registrations of one wallet take turns, so two at once cannot both take the last place.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "notify devices "+authority); err != nil {
			return err
		}
		var err error
		d, err = scanDevice(tx.QueryRow(ctx, `INSERT INTO `+s.q.devices+` AS d (authority, device_id, token, platform, created_at, updated_at)
			SELECT $1, $2, $3, $4, $5, $5
			WHERE EXISTS (SELECT 1 FROM `+s.q.devices+` WHERE authority = $1 AND device_id = $2)
			   OR (SELECT count(*) FROM `+s.q.devices+` WHERE authority = $1) < $6
			ON CONFLICT (authority, device_id) DO UPDATE SET token = excluded.token, platform = excluded.platform,
				updated_at = excluded.updated_at
			RETURNING `+deviceColumns, authority, r.DeviceID, r.Token, r.Platform, now, notify.MaxDevices))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return d, fault.Errorf(fault.Conflict, "a wallet keeps at most %d devices: remove one first", notify.MaxDevices)
	}
	if err != nil {
		return d, fmt.Errorf("register device: %w", err)
	}
	return d, nil
}

// Devices lists authority's devices, oldest registration first.
func (s *Store) Devices(ctx context.Context, authority string) ([]notify.Device, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+deviceColumns+` FROM `+s.q.devices+` WHERE authority = $1 ORDER BY created_at, device_id`, authority)
	if err != nil {
		return nil, fmt.Errorf("read devices: %w", err)
	}
	defer rows.Close()
	out := []notify.Device{}
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return nil, fmt.Errorf("read devices: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read devices: %w", err)
	}
	return out, nil
}

// RemoveDevice removes authority's device.
func (s *Store) RemoveDevice(ctx context.Context, authority, deviceID string) error {
	tag, err := s.Pool.Exec(ctx, `DELETE FROM `+s.q.devices+` WHERE authority = $1 AND device_id = $2`, authority, deviceID)
	if err != nil {
		return fmt.Errorf("remove device: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fault.Errorf(fault.NotFound, "device %s not found", deviceID)
	}
	return nil
}

// UseSignature records sig, signed at signedAt, until expires; false when it is recorded already.
// Concurrent requests' signatures are recorded together (see signatureRecorder).
func (s *Store) UseSignature(ctx context.Context, sig []byte, signedAt, expires int64) (bool, error) {
	return s.sigs.use(ctx, sig, signedAt, expires)
}

// AccountOwner returns account's authority and delegate.
func (s *Store) AccountOwner(ctx context.Context, account string) (authority, delegate string, found bool, err error) {
	err = s.Pool.QueryRow(ctx, `SELECT authority, coalesce(delegate, '') FROM `+s.q.accounts+` WHERE account = $1`, account).
		Scan(&authority, &delegate)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	return authority, delegate, true, nil
}

// Upkeep is the service's periodic work on its tables: what every replica may do at once.
type Upkeep struct {
	pool   *pgxpool.Pool
	ingest *Ingest
	now    func() time.Time
	// PendingFor is how long an occurrence waits for its account's new-user record before it is
	// dropped.
	PendingFor time.Duration
}

// NewUpkeep keeps schema's tables through pool; in delivers what waited.
func NewUpkeep(pool *pgxpool.Pool, in *Ingest, now func() time.Time) *Upkeep {
	return &Upkeep{pool: pool, ingest: in, now: now, PendingFor: 7 * 24 * time.Hour}
}

// PruneSignatures deletes the signatures whose messages have left the clock window; it returns how
// many. The records signed more than window before now are the ones it reads (the key's first
// pages); each goes once its own expires_at has passed.
func (u *Upkeep) PruneSignatures(ctx context.Context, window time.Duration) (int64, error) {
	now := u.now().Unix()
	tag, err := u.pool.Exec(ctx, `DELETE FROM `+u.ingest.q.signatures+` WHERE signed_at < $1 AND expires_at < $2`,
		now-int64(window/time.Second), now)
	if err != nil {
		return 0, fmt.Errorf("prune used signatures: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeliverPending delivers the occurrences whose account became known after they were kept (a
// new-user record written beside them, which could not see them), and drops those that waited
// longer than PendingFor. It returns how many it delivered.
func (u *Upkeep) DeliverPending(ctx context.Context) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, u.pool, func(tx pgx.Tx) error {
		// Rows a writer is taking are skipped: it delivers them.
		occs, err := u.ingest.takePending(ctx, tx, `DELETE FROM `+u.ingest.q.pending+` WHERE (account, source, tx_sig, tx_sig_index) IN (
			SELECT p.account, p.source, p.tx_sig, p.tx_sig_index FROM `+u.ingest.q.pending+` p
			JOIN `+u.ingest.q.accounts+` a ON a.account = p.account
			LIMIT 1000 FOR UPDATE OF p SKIP LOCKED) RETURNING occurrence`)
		if err != nil {
			return err
		}
		n = len(occs)
		if err := u.ingest.deliver(ctx, tx, occs); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM `+u.ingest.q.pending+` WHERE received_at < $1`, u.now().Add(-u.PendingFor).Unix())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("deliver pending occurrences: %w", err)
	}
	return n, nil
}
