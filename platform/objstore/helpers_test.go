package objstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tidemark/tidemark/platform/kit/kittest"
	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/objstore/miniotest"
)

var srv *miniotest.Server

func TestMain(m *testing.M) { os.Exit(miniotest.Main(m, &srv)) }

// backend is a Store under test with what the contract tests need to observe it.
type backend struct {
	name  string
	store objstore.Store
	// now is the clock the store checks URL expiry against.
	now func() time.Time
	// waitPast returns once the store's clock has passed t.
	waitPast func(t time.Time)
	// leftovers lists what failed uploads left behind (incomplete uploads, temporary files).
	leftovers func(tb testing.TB) []string
	// buffered is how much a Put may hold in memory.
	buffered int64
}

// backends returns fresh instances of every Store, in a fresh bucket or folder.
func backends(tb testing.TB) []backend {
	tb.Helper()
	return []backend{newS3Backend(tb), newLocalBackend(tb)}
}

func newS3Backend(tb testing.TB) backend {
	tb.Helper()
	cfg := srv.Config(miniotest.NewBucket(tb))
	// The smallest parts, so that tens of MiB make several.
	cfg.PartSize = objstore.MinPartSize
	store := mustNewS3(tb, cfg)
	client := mustMinioClient(tb)
	return backend{
		name:  "s3",
		store: store,
		now:   time.Now,
		// MinIO checks expiry against its clock, which is ours; only time passing will do.
		waitPast: func(t time.Time) { time.Sleep(time.Until(t) + 50*time.Millisecond) },
		leftovers: func(tb testing.TB) []string {
			tb.Helper()
			var keys []string
			for u := range client.ListIncompleteUploads(context.Background(), cfg.Bucket, "", true) {
				if u.Err != nil {
					tb.Fatalf("list incomplete uploads: %v", u.Err)
				}
				keys = append(keys, u.Key)
			}
			return keys
		},
		buffered: 2*objstore.MinPartSize + 1<<20,
	}
}

func mustNewS3(tb testing.TB, cfg objstore.S3Config) *objstore.S3 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objstore.NewS3(ctx, cfg)
	if err != nil {
		tb.Fatalf("NewS3: %v", err)
	}
	return s
}

// mustMinioClient is a raw client on the test server, to look behind the store's back.
func mustMinioClient(tb testing.TB) *minio.Client {
	tb.Helper()
	c, err := minio.New(srv.Endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1",
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// validateCase is an edit of a valid configuration and a part of the error Validate must then
// give ("" for none).
type validateCase[C any] struct {
	name    string
	edit    func(*C)
	wantErr string
}

// checkValidate checks what Validate says of a copy of valid after each case's edit.
func checkValidate[C any, PC interface {
	*C
	Validate() error
}](t *testing.T, valid C, cases []validateCase[C]) {
	t.Helper()
	for _, tc := range cases {
		c := valid
		tc.edit(&c)
		err := PC(&c).Validate()
		if (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: Validate() = %v, want error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

// localFixture is a Local store served by a test HTTP server under /downloads.
type localFixture struct {
	store *objstore.Local
	dir   string
	clock *kittest.Clock
	url   string // the server's root URL
}

func newLocal(tb testing.TB) localFixture {
	tb.Helper()
	var handler http.Handler
	ts := httptest.NewServer(http.StripPrefix("/downloads", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
	})))
	tb.Cleanup(ts.Close)
	clock := kittest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	dir := filepath.Join(tb.TempDir(), "exports")
	store, err := objstore.NewLocal(objstore.LocalConfig{
		Dir:     dir,
		BaseURL: ts.URL + "/downloads/",
		Key:     testKey,
		Now:     clock.Now,
	})
	if err != nil {
		tb.Fatalf("NewLocal: %v", err)
	}
	handler = store.Handler()
	return localFixture{store: store, dir: dir, clock: clock, url: ts.URL}
}

func newLocalBackend(tb testing.TB) backend {
	tb.Helper()
	f := newLocal(tb)
	return backend{
		name:     "local",
		store:    f.store,
		now:      f.clock.Now,
		waitPast: func(t time.Time) { f.clock.Set(t.Add(time.Nanosecond)) },
		leftovers: func(tb testing.TB) []string {
			tb.Helper()
			var tmp []string
			err := filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
				if err == nil && strings.Contains(d.Name(), ".tmp-") {
					tmp = append(tmp, p)
				}
				return err
			})
			if err != nil {
				tb.Fatal(err)
			}
			return tmp
		},
		buffered: 64 << 10,
	}
}

// body is a deterministic pseudo-random stream of n bytes, generated as it is read.
type body struct {
	n     int64
	state uint64
}

func newBody(n int64, seed uint64) *body { return &body{n: n, state: seed | 1} }

func (b *body) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	var word [8]byte
	for i := 0; i < len(p); i += 8 {
		// xorshift64: cheap enough that the generator does not dominate the measurements.
		b.state ^= b.state << 13
		b.state ^= b.state >> 7
		b.state ^= b.state << 17
		binary.LittleEndian.PutUint64(word[:], b.state)
		copy(p[i:], word[:])
	}
	b.n -= int64(len(p))
	return len(p), nil
}

// bodySHA is the hex SHA-256 of newBody(n, seed).
func bodySHA(tb testing.TB, n int64, seed uint64) string {
	tb.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, newBody(n, seed)); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

var errBoom = errors.New("boom")

// failingReader yields n bytes of r, then fails with errBoom.
type failingReader struct {
	r io.Reader
	n int64
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

// cancellingReader yields n bytes of r, then cancels the Put's context and keeps yielding.
type cancellingReader struct {
	r      io.Reader
	n      int64
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	if c.n > 0 && int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	return n, err
}

func mustPut(tb testing.TB, s objstore.Store, key string, r io.Reader, o objstore.PutOptions) int64 {
	tb.Helper()
	n, err := s.Put(context.Background(), key, r, o)
	if err != nil {
		tb.Fatalf("Put(%q): %v", key, err)
	}
	return n
}

func mustStat(tb testing.TB, s objstore.Store, key string) objstore.Info {
	tb.Helper()
	info, err := s.Stat(context.Background(), key)
	if err != nil {
		tb.Fatalf("Stat(%q): %v", key, err)
	}
	return info
}

func assertNotFound(tb testing.TB, s objstore.Store, key string) {
	tb.Helper()
	if info, err := s.Stat(context.Background(), key); !errors.Is(err, objstore.ErrNotFound) {
		tb.Fatalf("Stat(%q) = %+v, %v; want ErrNotFound", key, info, err)
	}
}

func mustURL(tb testing.TB, s objstore.Store, key string, expires time.Time) string {
	tb.Helper()
	u, err := s.URL(context.Background(), key, expires)
	if err != nil {
		tb.Fatalf("URL(%q): %v", key, err)
	}
	return u
}

// response is a downloaded answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// get fetches url, with header lines "Name: value" added to the request.
func get(tb testing.TB, method, url string, header ...string) response {
	tb.Helper()
	a := kittest.Fetch(tb, method, url, header...)
	return response{status: a.Status, header: a.Header, body: a.Body}
}

// downloadSHA streams url's body into SHA-256, returning the hex sum and size.
func downloadSHA(tb testing.TB, url string) (string, int64) {
	tb.Helper()
	resp, err := http.Get(url)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		tb.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil {
		tb.Fatalf("GET %s: %v", url, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// errorEnvelope decodes a JSON error answer strictly: exactly success and message.
func errorEnvelope(tb testing.TB, r response) (success bool, message string) {
	tb.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		tb.Fatalf("error Content-Type = %q, want application/json; charset=utf-8 (body %q)", ct, r.body)
	}
	var v struct {
		Success *bool   `json:"success"`
		Message *string `json:"message"`
	}
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.Success == nil || v.Message == nil {
		tb.Fatalf("error body %q: want {success, message} (%v)", r.body, err)
	}
	return *v.Success, *v.Message
}
