package pg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrate brings schema up to date. It creates the schema and the platform tables every
// service relies on (schema_migrations, kafka_offsets, outbox, outbox_seq), then applies each *.sql file
// found in migrations (nil = none) once, in lexical order of the file names, each in its own
// transaction with search_path set to the schema, so the files use unqualified names.
//
// Every step holds a transaction-level advisory lock keyed by the schema: replicas starting
// together serialise, and whoever comes second sees the versions already recorded.
// A file is identified by its base name; renaming an applied file applies it again.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string, migrations fs.FS) error {
	if schema == "" {
		return errors.New("pg: migrate: empty schema")
	}
	files, err := migrationFiles(migrations)
	if err != nil {
		return fmt.Errorf("pg: migrate %s: %w", schema, err)
	}
	s := pgx.Identifier{schema}.Sanitize()
	bootstrap := `
CREATE SCHEMA IF NOT EXISTS ` + s + `;
CREATE TABLE IF NOT EXISTS ` + s + `.schema_migrations (
	version text PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS ` + s + `.kafka_offsets (
	consumer_group text NOT NULL,
	topic text NOT NULL,
	partition int NOT NULL,
	"offset" bigint NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (consumer_group, topic, partition)
);
CREATE TABLE IF NOT EXISTS ` + s + `.outbox (
	id bigserial PRIMARY KEY,
	topic text NOT NULL,
	key bytea,
	value bytea NOT NULL,
	headers jsonb,
	created_at timestamptz NOT NULL DEFAULT now()
);
-- The last number the outbox gave a message of each edge channel (outbox.Add).
CREATE TABLE IF NOT EXISTS ` + s + `.outbox_seq (
	channel text PRIMARY KEY,
	seq bigint NOT NULL
);`
	if err := migrateStep(ctx, pool, schema, "", bootstrap); err != nil {
		return fmt.Errorf("pg: migrate %s: bootstrap: %w", schema, err)
	}
	for _, f := range files {
		body, err := fs.ReadFile(migrations, f.path)
		if err != nil {
			return fmt.Errorf("pg: migrate %s: read %s: %w", schema, f.path, err)
		}
		if err := migrateStep(ctx, pool, schema, f.version, string(body)); err != nil {
			return fmt.Errorf("pg: migrate %s: apply %s: %w", schema, f.version, err)
		}
	}
	return nil
}

type migrationFile struct{ version, path string }

func migrationFiles(fsys fs.FS) ([]migrationFile, error) {
	if fsys == nil {
		return nil, nil
	}
	var files []migrationFile
	seen := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".sql") {
			return nil
		}
		v := path.Base(p)
		if prev, ok := seen[v]; ok {
			return fmt.Errorf("migration %s found twice (%s and %s)", v, prev, p)
		}
		seen[v] = p
		files = append(files, migrationFile{version: v, path: p})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].version < files[j].version })
	return files, nil
}

// migrateStep runs body in one transaction under the schema's advisory lock. With a
// version it is skipped when already recorded and recorded when applied.
func migrateStep(ctx context.Context, pool *pgxpool.Pool, schema, version, body string) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('tidemark.migrate:' || $1, 0))`, schema); err != nil {
		return fmt.Errorf("advisory lock: %w", err)
	}
	s := pgx.Identifier{schema}.Sanitize()
	if version != "" {
		var applied bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+s+`.schema_migrations WHERE version = $1)`, version).Scan(&applied)
		if err != nil {
			return fmt.Errorf("check version: %w", err)
		}
		if applied {
			return nil
		}
	}
	// The schema may not exist yet during bootstrap; SET LOCAL accepts that.
	if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+s); err != nil {
		return fmt.Errorf("set search_path: %w", err)
	}
	// No arguments: pgx uses the simple protocol, which runs a multi-statement file as is.
	if _, err := tx.Exec(ctx, body); err != nil {
		return err
	}
	if version != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO `+s+`.schema_migrations (version) VALUES ($1)`, version); err != nil {
			return fmt.Errorf("record version: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
