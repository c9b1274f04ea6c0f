// Package objstore stores export files: S3 (any S3-compatible service, MinIO in tests) in a
// cluster, a local folder on a laptop. Both stream uploads, make an object visible only once it
// is complete, and mint time-limited download URLs.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Store holds export files. Implementations are safe for concurrent use.
type Store interface {
	// Put streams r into key as one object, uploading in parts so the whole body is never held in
	// memory; the object becomes visible only when r is fully read and the upload completes (an
	// error or a cancelled ctx leaves no new object, an existing one under key stays as it was, and
	// the partial upload is aborted). It returns the bytes stored.
	Put(ctx context.Context, key string, r io.Reader, o PutOptions) (int64, error)
	// Stat returns the object's info, or an error wrapping ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// URL returns a GET URL for key that stops working at expires, which must be in the future
	// and at most MaxURLExpiry away. It does not check that the object exists.
	URL(ctx context.Context, key string, expires time.Time) (string, error)
}

// PutOptions describe an object being stored.
type PutOptions struct {
	// ContentType is served with the object; empty means application/octet-stream.
	ContentType string
	// ContentDisposition is served with the object, e.g. `attachment; filename="trades.csv"`.
	ContentDisposition string
	// Metadata is small user metadata returned by Stat. Keys are lower-case ASCII letters, digits,
	// '-' and '_'; values printable ASCII without surrounding spaces (they travel as HTTP headers);
	// at most 2 KiB in all (S3's limit).
	Metadata map[string]string
}

// Info describes a stored object.
type Info struct {
	Key          string
	Size         int64
	Metadata     map[string]string // never nil
	LastModified time.Time
}

// ErrNotFound is wrapped by the errors of operations on a missing object.
var ErrNotFound = errors.New("objstore: object not found")

// MaxURLExpiry is the longest a download URL may live: S3 refuses presigned URLs valid for longer,
// and the local store applies the same limit so that the dev stack fails the same way.
const MaxURLExpiry = 7 * 24 * time.Hour

const (
	maxKeyLen      = 1024
	maxMetadataLen = 2048
	defaultType    = "application/octet-stream"
)

// ValidateKey reports whether key is acceptable to every Store: 1 to 1024 bytes of UTF-8 without
// control characters or backslashes, '/'-separated segments that are not empty and do not start
// with '.'. The last rule excludes ".." (so a key can never leave the local store's folder) and
// keeps names free for the local store's temporary and metadata files.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errors.New("objstore: empty key")
	case len(key) > maxKeyLen:
		return fmt.Errorf("objstore: key longer than %d bytes", maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("objstore: key %q is not UTF-8", key)
	case strings.Contains(key, `\`):
		return fmt.Errorf("objstore: key %q contains a backslash", key)
	}
	for _, c := range key {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("objstore: key %q contains a control character", key)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("objstore: key %q has an empty segment (leading, trailing or double '/')", key)
		case seg[0] == '.':
			return fmt.Errorf("objstore: key %q has a segment starting with '.'", key)
		}
	}
	return nil
}

func validatePut(key string, o PutOptions) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if !printable(o.ContentType) {
		return fmt.Errorf("objstore: content type %q is not printable ASCII", o.ContentType)
	}
	if !printable(o.ContentDisposition) {
		return fmt.Errorf("objstore: content disposition %q is not printable ASCII", o.ContentDisposition)
	}
	total := 0
	for k, v := range o.Metadata {
		if k == "" || strings.TrimLeft(k, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return fmt.Errorf("objstore: metadata key %q: want lower-case letters, digits, '-' and '_'", k)
		}
		if !printable(v) || strings.TrimSpace(v) != v {
			return fmt.Errorf("objstore: metadata %q value %q: want printable ASCII without surrounding spaces", k, v)
		}
		total += len(k) + len(v)
	}
	if total > maxMetadataLen {
		return fmt.Errorf("objstore: metadata of %d bytes exceeds %d", total, maxMetadataLen)
	}
	return nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// urlLifetime checks expires against now and returns how long a URL minted now may live.
func urlLifetime(now, expires time.Time) (time.Duration, error) {
	d := expires.Sub(now)
	switch {
	case d < time.Second:
		// S3 expresses the lifetime in whole seconds; less than one is already expired.
		return 0, fmt.Errorf("objstore: URL expiry %s is not at least 1s in the future", expires.Format(time.RFC3339))
	case d > MaxURLExpiry:
		return 0, fmt.Errorf("objstore: URL expiry %s is more than %s away", expires.Format(time.RFC3339), MaxURLExpiry)
	}
	return d, nil
}

// ctxReader fails reads once ctx is done, so that a cancelled Put stops at the next read instead
// of uploading the rest of the body.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
