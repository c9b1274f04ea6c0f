package objstore_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/objstore"
)

func TestLocalHandlerRefuses(t *testing.T) {
	t.Parallel()
	f := newLocal(t)
	const key = "exports/a.csv"
	mustPut(t, f.store, key, strings.NewReader("secret,data\n"), objstore.PutOptions{})
	if err := os.WriteFile(filepath.Join(filepath.Dir(f.dir), "outside.txt"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	expires := f.clock.Now().Add(time.Hour)
	good, err := url.Parse(mustURL(t, f.store, key, expires))
	if err != nil {
		t.Fatal(err)
	}
	otherSig := mustURL(t, f.store, "exports/b.csv", expires)
	// forge signs like the store does, as someone holding the key would: it shows that the
	// handler's own key checks hold even then.
	forge := func(rawPath, key string) string {
		m := hmac.New(sha256.New, testKey)
		m.Write([]byte(key + "\n" + strconv.FormatInt(expires.Unix(), 10)))
		return f.url + "/downloads/" + rawPath + "?expires=" + strconv.FormatInt(expires.Unix(), 10) + "&signature=" + hex.EncodeToString(m.Sum(nil))
	}
	with := func(edit func(u *url.URL, q url.Values)) string {
		u := *good
		q := u.Query()
		edit(&u, q)
		u.RawQuery = q.Encode()
		return u.String()
	}

	tests := []struct {
		name       string
		method     string
		url        string
		wantStatus int
		wantMsg    string
	}{
		{"tampered signature", http.MethodGet, with(func(_ *url.URL, q url.Values) {
			sig := []byte(q.Get("signature"))
			sig[0] ^= 1
			q.Set("signature", string(sig))
		}), 403, "invalid signature"},
		{"signature of another key", http.MethodGet, with(func(_ *url.URL, q url.Values) {
			o, _ := url.Parse(otherSig)
			q.Set("signature", o.Query().Get("signature"))
		}), 403, "invalid signature"},
		{"extended expiry", http.MethodGet, with(func(_ *url.URL, q url.Values) {
			q.Set("expires", strconv.FormatInt(expires.Add(time.Hour).Unix(), 10))
		}), 403, "invalid signature"},
		{"no signature", http.MethodGet, with(func(_ *url.URL, q url.Values) { q.Del("signature") }), 403, "invalid signature"},
		{"no expiry", http.MethodGet, with(func(_ *url.URL, q url.Values) { q.Del("expires") }), 403, "invalid signature"},
		{"other path", http.MethodGet, with(func(u *url.URL, _ url.Values) { u.Path = "/downloads/exports/b.csv" }), 403, "invalid signature"},
		{"traversal, unsigned", http.MethodGet, with(func(u *url.URL, _ url.Values) { u.Path = "/downloads/exports/../../outside.txt" }), 403, "invalid signature"},
		{"traversal, signed", http.MethodGet, forge("..%2Foutside.txt", "../outside.txt"), 400, "invalid key"},
		{"traversal with dot segments, signed", http.MethodGet, forge("exports/../../outside.txt", "exports/../../outside.txt"), 400, "invalid key"},
		{"absolute path, signed", http.MethodGet, forge("%2Fetc%2Fpasswd", "/etc/passwd"), 400, "invalid key"},
		{"metadata file, signed", http.MethodGet, forge("exports/.a.csv.meta.json", "exports/.a.csv.meta.json"), 400, "invalid key"},
		{"missing object", http.MethodGet, forge("exports/missing.csv", "exports/missing.csv"), 404, "not found"},
		{"a directory", http.MethodGet, forge("exports", "exports"), 404, "not found"},
		{"wrong method", http.MethodPost, good.String(), 405, "method not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, tt.method, tt.url)
			if r.status != tt.wantStatus {
				t.Fatalf("%s %s = %d %q, want %d", tt.method, tt.url, r.status, r.body, tt.wantStatus)
			}
			if success, msg := errorEnvelope(t, r); success || msg != tt.wantMsg {
				t.Errorf("body = success %v message %q, want false %q", success, msg, tt.wantMsg)
			}
		})
	}

	// The untouched URL still works, until it expires.
	if r := get(t, http.MethodGet, good.String()); r.status != 200 || string(r.body) != "secret,data\n" {
		t.Fatalf("GET of the good URL = %d %q", r.status, r.body)
	}
	f.clock.Set(expires)
	r := get(t, http.MethodGet, good.String())
	if success, msg := errorEnvelope(t, r); r.status != 403 || success || msg != "link expired" {
		t.Errorf("GET at expiry = %d %q, want 403 link expired", r.status, r.body)
	}
}

func TestLocalHandlerServes(t *testing.T) {
	t.Parallel()
	f := newLocal(t)
	const key = "exports/job 7/trades.csv"
	content := "0123456789abcdefghijklmnopqrstuvwxyz"
	mustPut(t, f.store, key, strings.NewReader(content), objstore.PutOptions{
		ContentType:        "text/csv",
		ContentDisposition: `attachment; filename="trades.csv"`,
	})
	u := mustURL(t, f.store, key, f.clock.Now().Add(time.Hour))
	if !strings.HasPrefix(u, f.url+"/downloads/exports/job%207/trades.csv?") {
		t.Errorf("URL = %s, want it under %s/downloads/ with the key escaped", u, f.url)
	}

	tests := []struct {
		name       string
		method     string
		header     []string
		wantStatus int
		wantBody   string
		wantHeader map[string]string
	}{
		{"whole", http.MethodGet, nil, 200, content, map[string]string{
			"Content-Type": "text/csv", "Content-Disposition": `attachment; filename="trades.csv"`,
			"Content-Length": "36", "Accept-Ranges": "bytes",
		}},
		{"head", http.MethodHead, nil, 200, "", map[string]string{"Content-Type": "text/csv", "Content-Length": "36"}},
		{"range", http.MethodGet, []string{"Range: bytes=10-19"}, 206, "abcdefghij", map[string]string{
			"Content-Range": "bytes 10-19/36", "Content-Type": "text/csv",
		}},
		{"suffix range", http.MethodGet, []string{"Range: bytes=-3"}, 206, "xyz", map[string]string{"Content-Range": "bytes 33-35/36"}},
		{"unsatisfiable range", http.MethodGet, []string{"Range: bytes=100-"}, 416, "", map[string]string{"Content-Range": "bytes */36"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, tt.method, u, tt.header...)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d %q, want %d", r.status, r.body, tt.wantStatus)
			}
			if tt.wantStatus < 400 && string(r.body) != tt.wantBody {
				t.Errorf("body = %q, want %q", r.body, tt.wantBody)
			}
			for name, want := range tt.wantHeader {
				if got := r.header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestLocalFiles checks the folder layout the dev stack relies on: plain files under Dir.
func TestLocalFiles(t *testing.T) {
	t.Parallel()
	f := newLocal(t)
	mustPut(t, f.store, "exports/a.csv", strings.NewReader("a,b\n"), objstore.PutOptions{Metadata: map[string]string{"records": "1"}})
	b, err := os.ReadFile(filepath.Join(f.dir, "exports", "a.csv"))
	if err != nil || string(b) != "a,b\n" {
		t.Errorf("file = %q, %v; want the object's content", b, err)
	}
	entries, err := os.ReadDir(filepath.Join(f.dir, "exports"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != ".a.csv.meta.json a.csv" {
		t.Errorf("folder holds %q, want the object and its hidden metadata file", names)
	}

	// A file placed by hand is an object without metadata.
	if err := os.WriteFile(filepath.Join(f.dir, "manual.csv"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if info := mustStat(t, f.store, "manual.csv"); info.Size != 1 || len(info.Metadata) != 0 {
		t.Errorf("Stat of a hand-placed file = %+v", info)
	}

	// A key that is a prefix of others is not an object, and cannot become one.
	assertNotFound(t, f.store, "exports")
	if _, err := f.store.Put(context.Background(), "exports", strings.NewReader("x"), objstore.PutOptions{}); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Errorf("Put of a prefix = %v, want a prefix error", err)
	}
	if err := f.store.Delete(context.Background(), "exports"); err != nil {
		t.Errorf("Delete of a prefix = %v, want nil", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "exports", "a.csv")); err != nil {
		t.Errorf("Delete of a prefix touched its objects: %v", err)
	}
}

func TestLocalConfigValidate(t *testing.T) {
	t.Parallel()
	valid := objstore.LocalConfig{Dir: "/tmp/x", BaseURL: "http://localhost:8080/downloads", Key: testKey}
	checkValidate(t, valid, []validateCase[objstore.LocalConfig]{
		{"valid", func(*objstore.LocalConfig) {}, ""},
		{"root base URL", func(c *objstore.LocalConfig) { c.BaseURL = "https://dev.example.com" }, ""},
		{"no dir", func(c *objstore.LocalConfig) { c.Dir = "" }, "dir"},
		{"relative base URL", func(c *objstore.LocalConfig) { c.BaseURL = "/downloads" }, "base URL"},
		{"base URL with query", func(c *objstore.LocalConfig) { c.BaseURL = "http://localhost/d?x=1" }, "base URL"},
		{"short key", func(c *objstore.LocalConfig) { c.Key = []byte("short") }, "key"},
	})
}
