package objstore

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/platform/fault"

	"github.com/tidemark/tidemark/platform/httpapi"
)

// LocalConfig configures the local folder store.
type LocalConfig struct {
	// Dir holds the objects, one file per key (key "a/b.csv" is Dir/a/b.csv) beside a hidden
	// metadata file (Dir/a/.b.csv.meta.json). It is created when missing.
	Dir string
	// BaseURL is where Handler is reachable, e.g. "http://localhost:8080/downloads".
	BaseURL string
	// Key signs download URLs; at least 16 bytes.
	Key []byte
	// Now is the clock for URL expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives Handler's internal errors; nil discards them.
	Logger *slog.Logger
}

// Validate reports the first problem with the config.
func (c LocalConfig) Validate() error {
	if c.Dir == "" {
		return errors.New("objstore: local dir is empty")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return fmt.Errorf("objstore: local base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("objstore: local base URL %q: want http(s)://host[:port][/path]", c.BaseURL)
	}
	if len(c.Key) < 16 {
		return errors.New("objstore: local signing key shorter than 16 bytes")
	}
	return nil
}

// Local is a Store in a local folder, for the dev stack. Put is atomic (a temporary file renamed
// into place) and its object and metadata change together for the callers of this *Local; another
// process serving the same folder may briefly see new content with old metadata during an
// overwrite.
type Local struct {
	dir     string
	baseURL string
	key     []byte
	now     func() time.Time
	logger  *slog.Logger

	// mu makes the two renames of a Put (metadata, then data) and the two removals of a Delete
	// appear as one to Stat and the handler. Uploads themselves run outside it.
	mu sync.RWMutex
}

var _ Store = (*Local)(nil)

// NewLocal creates cfg.Dir when missing and returns the store.
func NewLocal(cfg LocalConfig) (*Local, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("objstore: local dir: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("objstore: create local dir: %w", err)
	}
	l := &Local{
		dir:     dir,
		baseURL: strings.TrimRight(cfg.BaseURL, "/"),
		key:     append([]byte(nil), cfg.Key...),
		now:     cfg.Now,
		logger:  cfg.Logger,
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// localMeta is the content of an object's metadata file.
type localMeta struct {
	ContentType        string            `json:"contentType"`
	ContentDisposition string            `json:"contentDisposition,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

// paths returns the data and metadata file of a valid key.
func (l *Local) paths(key string) (data, meta string) {
	data = filepath.Join(l.dir, filepath.FromSlash(key))
	dir, name := filepath.Split(data)
	return data, filepath.Join(dir, "."+name+".meta.json")
}

// Put implements Store. Keys that are both an object and a prefix of another ("a" and "a/b") cannot
// coexist here, unlike on S3.
func (l *Local) Put(ctx context.Context, key string, r io.Reader, o PutOptions) (int64, error) {
	if err := validatePut(key, o); err != nil {
		return 0, err
	}
	dataPath, metaPath := l.paths(key)
	if fi, err := os.Stat(dataPath); err == nil && fi.IsDir() {
		return 0, fmt.Errorf("objstore: put %s: key is the prefix of other objects", key)
	}
	dir, name := filepath.Split(dataPath)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if o.ContentType == "" {
		o.ContentType = defaultType
	}
	meta, err := json.Marshal(localMeta{ContentType: o.ContentType, ContentDisposition: o.ContentDisposition, Metadata: o.Metadata})
	if err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	metaTmp, err := writeTemp(dir, name, func(f *os.File) error {
		_, err := f.Write(meta)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("objstore: put %s: metadata: %w", key, err)
	}
	defer os.Remove(metaTmp) // fails harmlessly once renamed
	var n int64
	dataTmp, err := writeTemp(dir, name, func(f *os.File) error {
		var err error
		n, err = io.Copy(f, ctxReader{ctx, r})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	defer os.Remove(dataTmp)
	// A cancellation after the last read still means the caller gave up on this object.
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	// Metadata first: should the process die in between, a new key stays invisible (no data
	// file) rather than appearing without its metadata.
	if err := os.Rename(metaTmp, metaPath); err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	if err := os.Rename(dataTmp, dataPath); err != nil {
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	return n, nil
}

// writeTemp writes a hidden temporary file beside name in dir (so that renaming it over the
// final name is atomic) and returns its path; on error the file is removed. It skips fsync: a
// laptop crash losing a dev export is acceptable.
func writeTemp(dir, name string, write func(*os.File) error) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return "", err
	}
	err = write(f)
	if err == nil {
		// CreateTemp makes the file private; the API serving downloads may run as another user.
		err = f.Chmod(0o644)
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// Stat implements Store.
func (l *Local) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	f, fi, meta, err := l.open(key)
	if err != nil {
		return Info{}, fmt.Errorf("objstore: stat %s: %w", key, err)
	}
	_ = f.Close()
	md := meta.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return Info{Key: key, Size: fi.Size(), Metadata: md, LastModified: fi.ModTime()}, nil
}

// open opens key's data file and reads its metadata; a missing object is ErrNotFound. The caller
// holds mu and closes the file.
func (l *Local) open(key string) (*os.File, fs.FileInfo, localMeta, error) {
	dataPath, metaPath := l.paths(key)
	f, err := os.Open(dataPath)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil, localMeta{}, ErrNotFound
	}
	if err != nil {
		return nil, nil, localMeta{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		// A directory: the prefix of other keys, not an object.
		err = ErrNotFound
	}
	var meta localMeta
	if err == nil {
		var b []byte
		b, err = os.ReadFile(metaPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Written by hand into the folder; serve it without metadata.
			err = nil
		case err == nil:
			err = json.Unmarshal(b, &meta)
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, localMeta{}, err
	}
	if meta.ContentType == "" {
		meta.ContentType = defaultType
	}
	return f, fi, meta, nil
}

// Delete implements Store.
func (l *Local) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	dataPath, metaPath := l.paths(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if fi, err := os.Lstat(dataPath); err == nil && fi.IsDir() {
		return nil
	}
	// Empty parent directories stay: removing them could race with a Put creating a file there.
	for _, p := range []string{dataPath, metaPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("objstore: delete %s: %w", key, err)
		}
	}
	return nil
}

// URL implements Store: BaseURL/<escaped key>?expires=<unix seconds>&signature=<hex HMAC-SHA256>.
// expires is truncated to the second.
func (l *Local) URL(ctx context.Context, key string, expires time.Time) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	if _, err := urlLifetime(l.now(), expires); err != nil {
		return "", err
	}
	exp := expires.Unix()
	q := url.Values{"expires": {strconv.FormatInt(exp, 10)}, "signature": {hex.EncodeToString(l.sign(key, exp))}}
	return l.baseURL + "/" + escapeKey(key) + "?" + q.Encode(), nil
}

func escapeKey(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func (l *Local) sign(key string, expires int64) []byte {
	m := hmac.New(sha256.New, l.key)
	// Keys cannot contain '\n', so key and expiry cannot be shifted into one another.
	m.Write([]byte(key + "\n" + strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// Handler serves the URLs minted by URL, for GET and HEAD, with Range support. It expects request
// paths relative to BaseURL's path, so mount it with that prefix stripped:
//
//	mux.Handle("/downloads/", http.StripPrefix("/downloads", local.Handler()))
//
// Refusals are JSON {"success":false,"message":...}: 403 for a bad or expired signature, 404 for a
// missing object.
func (l *Local) Handler() http.Handler {
	return http.HandlerFunc(l.serve)
}

func (l *Local) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpapi.WriteError(w, r, fault.Errorf(httpapi.MethodNotAllowed, "method not allowed"), l.logger)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/")
	q := r.URL.Query()
	exp, expErr := strconv.ParseInt(q.Get("expires"), 10, 64)
	sig, sigErr := hex.DecodeString(q.Get("signature"))
	// Signature first, in constant time, so that a forged URL learns nothing about the key.
	if expErr != nil || sigErr != nil || !hmac.Equal(sig, l.sign(key, exp)) {
		httpapi.WriteError(w, r, fault.Errorf(fault.Forbidden, "invalid signature"), l.logger)
		return
	}
	if !l.now().Before(time.Unix(exp, 0)) {
		httpapi.WriteError(w, r, fault.Errorf(fault.Forbidden, "link expired"), l.logger)
		return
	}
	// URL never signs an invalid key; this guards the file system should the signing key leak.
	if err := ValidateKey(key); err != nil {
		httpapi.WriteError(w, r, fault.Errorf(fault.Invalid, "invalid key"), l.logger)
		return
	}

	l.mu.RLock()
	f, fi, meta, err := l.open(key)
	l.mu.RUnlock()
	if errors.Is(err, ErrNotFound) {
		httpapi.WriteError(w, r, fault.Errorf(fault.NotFound, "not found"), l.logger)
		return
	}
	if err != nil {
		httpapi.WriteError(w, r, fmt.Errorf("open download %s: %w", key, err), l.logger)
		return
	}
	// The open file keeps serving the content it had even if a Put replaces it meanwhile.
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", meta.ContentType)
	if meta.ContentDisposition != "" {
		h.Set("Content-Disposition", meta.ContentDisposition)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, path.Base(key), fi.ModTime(), f)
}
