package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/objstore"
)

// The contract every Store keeps, run against each backend.

var allBackends = []struct {
	name string
	new  func(testing.TB) backend
}{
	{"s3", newS3Backend},
	{"local", newLocalBackend},
}

// eachBackend runs test in parallel subtests, one per backend, each on a fresh store.
func eachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, be := range allBackends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			test(t, be.new(t))
		})
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		key      string
		size     int64
		opts     objstore.PutOptions
		wantType string
	}{
		{
			name: "metadata and headers",
			key:  "exports/job-1/trades.csv",
			size: 1000,
			opts: objstore.PutOptions{
				ContentType:        "text/csv; charset=utf-8",
				ContentDisposition: `attachment; filename="trades.csv"`,
				Metadata:           map[string]string{"records": "42", "job-id": "j-1", "row_count": "7", "note": "a=b; c"},
			},
			wantType: "text/csv; charset=utf-8",
		},
		{name: "empty body, defaults", key: "empty.csv", size: 0, wantType: "application/octet-stream"},
		{
			// Bigger than a single request, smaller than a part: a one-part multipart upload on S3.
			name:     "odd key characters",
			key:      "exports/Q1 report ü+%?#&=.csv",
			size:     3 << 20,
			opts:     objstore.PutOptions{ContentType: "text/csv"},
			wantType: "text/csv",
		},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				before := time.Now()
				if n := mustPut(t, b.store, tt.key, newBody(tt.size, 1), tt.opts); n != tt.size {
					t.Errorf("Put = %d bytes, want %d", n, tt.size)
				}
				after := time.Now()

				info := mustStat(t, b.store, tt.key)
				wantMeta := tt.opts.Metadata
				if wantMeta == nil {
					wantMeta = map[string]string{}
				}
				if info.Key != tt.key || info.Size != tt.size || !maps.Equal(info.Metadata, wantMeta) || info.Metadata == nil {
					t.Errorf("Stat = %+v, want key %q size %d metadata %v", info, tt.key, tt.size, wantMeta)
				}
				// S3 keeps whole seconds.
				if lm := info.LastModified; lm.Before(before.Truncate(time.Second)) || lm.After(after.Add(time.Second)) {
					t.Errorf("LastModified = %v, want between %v and %v", lm, before, after)
				}

				url := mustURL(t, b.store, tt.key, b.now().Add(time.Hour))
				r := get(t, http.MethodGet, url)
				if r.status != http.StatusOK {
					t.Fatalf("GET = %d %s", r.status, r.body)
				}
				if got := r.header.Get("Content-Type"); got != tt.wantType {
					t.Errorf("Content-Type = %q, want %q", got, tt.wantType)
				}
				if got := r.header.Get("Content-Disposition"); got != tt.opts.ContentDisposition {
					t.Errorf("Content-Disposition = %q, want %q", got, tt.opts.ContentDisposition)
				}
				want, _ := io.ReadAll(newBody(tt.size, 1))
				if !bytes.Equal(r.body, want) {
					t.Errorf("downloaded %d bytes differ from the %d put", len(r.body), len(want))
				}

				ctx := context.Background()
				if err := b.store.Delete(ctx, tt.key); err != nil {
					t.Fatalf("Delete: %v", err)
				}
				assertNotFound(t, b.store, tt.key)
				if err := b.store.Delete(ctx, tt.key); err != nil {
					t.Errorf("Delete of a deleted key: %v", err)
				}
				if r := get(t, http.MethodGet, url); r.status != http.StatusNotFound {
					t.Errorf("GET after Delete = %d, want 404", r.status)
				}
			})
		}
	})
}

func TestDeleteMissing(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		for _, key := range []string{"never-existed.csv", "no/such/prefix/file.csv"} {
			if err := b.store.Delete(context.Background(), key); err != nil {
				t.Errorf("Delete(%q) = %v, want nil", key, err)
			}
		}
	})
}

func TestPutLargeStreamed(t *testing.T) {
	t.Parallel()
	const size = 40 << 20 // eight parts on S3
	want := bodySHA(t, size, 7)
	eachBackend(t, func(t *testing.T, b backend) {
		const key = "exports/big.csv"
		if n := mustPut(t, b.store, key, newBody(size, 7), objstore.PutOptions{ContentType: "text/csv"}); n != size {
			t.Fatalf("Put = %d bytes, want %d", n, size)
		}
		if info := mustStat(t, b.store, key); info.Size != size {
			t.Errorf("Stat size = %d, want %d", info.Size, size)
		}
		got, n := downloadSHA(t, mustURL(t, b.store, key, b.now().Add(time.Hour)))
		if got != want || n != size {
			t.Errorf("downloaded %d bytes with sha256 %s, want %d with %s", n, got, int64(size), want)
		}
	})
}

func TestPutFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// reader returns the body to Put under a context it may cancel.
		reader  func(cancel context.CancelFunc) io.Reader
		wantErr error
	}{
		{"reader fails at once", func(context.CancelFunc) io.Reader { return &failingReader{newBody(1<<20, 2), 0} }, errBoom},
		{"reader fails in the first request", func(context.CancelFunc) io.Reader { return &failingReader{newBody(1<<20, 2), 100 << 10} }, errBoom},
		{"reader fails after parts", func(context.CancelFunc) io.Reader { return &failingReader{newBody(40<<20, 2), 12 << 20} }, errBoom},
		{"context cancelled before", func(cancel context.CancelFunc) io.Reader { cancel(); return newBody(1<<20, 2) }, context.Canceled},
		{"context cancelled in the first request", func(cancel context.CancelFunc) io.Reader {
			return &cancellingReader{newBody(1<<20, 2), 100 << 10, cancel}
		}, context.Canceled},
		{"context cancelled after parts", func(cancel context.CancelFunc) io.Reader {
			return &cancellingReader{newBody(40<<20, 2), 12 << 20, cancel}
		}, context.Canceled},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				const newKey, oldKey = "exports/new.csv", "exports/old.csv"
				oldOpts := objstore.PutOptions{Metadata: map[string]string{"records": "1"}}
				mustPut(t, b.store, oldKey, strings.NewReader("old"), oldOpts)

				for _, key := range []string{newKey, oldKey} {
					ctx, cancel := context.WithCancel(context.Background())
					n, err := b.store.Put(ctx, key, tt.reader(cancel), objstore.PutOptions{Metadata: map[string]string{"records": "2"}})
					cancel()
					if !errors.Is(err, tt.wantErr) {
						t.Errorf("Put(%q) = %d, %v; want an error wrapping %v", key, n, err, tt.wantErr)
					}
				}
				assertNotFound(t, b.store, newKey)
				if info := mustStat(t, b.store, oldKey); info.Size != 3 || !maps.Equal(info.Metadata, oldOpts.Metadata) {
					t.Errorf("existing object after a failed overwrite = %+v, want it unchanged", info)
				}
				if left := b.leftovers(t); len(left) > 0 {
					t.Errorf("failed uploads left %q", left)
				}
				if err := b.store.Delete(context.Background(), oldKey); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}

func TestOverwrite(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const key = "exports/report.csv"
		mustPut(t, b.store, key, newBody(5000, 1), objstore.PutOptions{
			ContentType: "text/csv",
			Metadata:    map[string]string{"records": "1", "only-first": "x"},
		})
		second := objstore.PutOptions{ContentType: "text/plain", Metadata: map[string]string{"records": "2"}}
		mustPut(t, b.store, key, newBody(2<<20, 2), second)

		if info := mustStat(t, b.store, key); info.Size != 2<<20 || !maps.Equal(info.Metadata, second.Metadata) {
			t.Errorf("Stat = %+v, want size %d metadata %v", info, 2<<20, second.Metadata)
		}
		r := get(t, http.MethodGet, mustURL(t, b.store, key, b.now().Add(time.Hour)))
		want, _ := io.ReadAll(newBody(2<<20, 2))
		if r.status != http.StatusOK || !bytes.Equal(r.body, want) {
			t.Errorf("GET = %d with %d bytes, want the second body", r.status, len(r.body))
		}
		if got := r.header.Get("Content-Type"); got != "text/plain" {
			t.Errorf("Content-Type = %q, want text/plain", got)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const writers = 6
		var wg sync.WaitGroup
		for i := range writers {
			// Not the must helpers: they would call t.Fatal outside the test's goroutine.
			wg.Go(func() {
				ctx := context.Background()
				own := fmt.Sprintf("exports/own-%d.csv", i)
				size := int64(1<<20 + i)
				if _, err := b.store.Put(ctx, own, newBody(size, uint64(i)), objstore.PutOptions{}); err != nil {
					t.Errorf("Put(%s): %v", own, err)
				}
				if info, err := b.store.Stat(ctx, own); err != nil || info.Size != size {
					t.Errorf("Stat(%s) = %+v, %v; want size %d", own, info, err, size)
				}
				// Everyone overwrites one key; whichever wins, it is whole.
				md := map[string]string{"writer": strconv.Itoa(i)}
				if _, err := b.store.Put(ctx, "exports/shared.csv", newBody(2<<20+int64(i), uint64(i)), objstore.PutOptions{Metadata: md}); err != nil {
					t.Errorf("Put(shared): %v", err)
				}
			})
		}
		wg.Wait()
		info := mustStat(t, b.store, "exports/shared.csv")
		i, err := strconv.Atoi(info.Metadata["writer"])
		if err != nil || info.Size != 2<<20+int64(i) {
			t.Fatalf("shared object = %+v, want one writer's size and metadata", info)
		}
		got, _ := downloadSHA(t, mustURL(t, b.store, "exports/shared.csv", b.now().Add(time.Hour)))
		if got != bodySHA(t, 2<<20+int64(i), uint64(i)) {
			t.Errorf("shared object content is not writer %d's", i)
		}
	})
}

func TestURLExpiry(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		const key = "exports/soon.csv"
		mustPut(t, b.store, key, strings.NewReader("a,b\n1,2\n"), objstore.PutOptions{ContentType: "text/csv"})
		expires := b.now().Add(2 * time.Second)
		url := mustURL(t, b.store, key, expires)
		if r := get(t, http.MethodGet, url); r.status != http.StatusOK || string(r.body) != "a,b\n1,2\n" {
			t.Fatalf("GET before expiry = %d %q", r.status, r.body)
		}
		b.waitPast(expires)
		if r := get(t, http.MethodGet, url); r.status != http.StatusForbidden {
			t.Errorf("GET after expiry = %d %q, want 403", r.status, r.body)
		}
	})
}

func TestURLRejectsExpiry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      time.Duration
		wantErr bool
	}{
		{"past", -time.Minute, true},
		{"now", 0, true},
		{"under a second", 500 * time.Millisecond, true},
		{"eight hours", 8 * time.Hour, false},
		{"just under seven days", objstore.MaxURLExpiry - time.Minute, false},
		{"over seven days", objstore.MaxURLExpiry + time.Minute, true},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tt := range tests {
			_, err := b.store.URL(context.Background(), "exports/x.csv", b.now().Add(tt.in))
			if (err != nil) != tt.wantErr {
				t.Errorf("%s: URL error = %v, want error %v", tt.name, err, tt.wantErr)
			}
		}
	})
}

func TestInvalidKeys(t *testing.T) {
	t.Parallel()
	keys := []string{
		"", "/abs.csv", "a//b.csv", "dir/", "../x.csv", "a/../../b.csv", "./a.csv", "a/./b.csv",
		".hidden", "a/.b.csv.meta.json", `a\b.csv`, "a\nb.csv", "a\x00b", "\xff.csv", strings.Repeat("k", 1025),
	}
	eachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		for _, key := range keys {
			errs := map[string]error{}
			_, errs["Put"] = b.store.Put(ctx, key, strings.NewReader("x"), objstore.PutOptions{})
			_, errs["Stat"] = b.store.Stat(ctx, key)
			errs["Delete"] = b.store.Delete(ctx, key)
			_, errs["URL"] = b.store.URL(ctx, key, b.now().Add(time.Hour))
			for op, err := range errs {
				if err == nil || errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), "key") {
					t.Errorf("%s(%q) = %v, want an invalid key error", op, key, err)
				}
			}
		}
		if left := b.leftovers(t); len(left) > 0 {
			t.Errorf("refused keys left %q", left)
		}
	})
}

func TestInvalidPutOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts objstore.PutOptions
	}{
		{"upper-case metadata key", objstore.PutOptions{Metadata: map[string]string{"Records": "1"}}},
		{"metadata key with space", objstore.PutOptions{Metadata: map[string]string{"row count": "1"}}},
		{"empty metadata key", objstore.PutOptions{Metadata: map[string]string{"": "1"}}},
		{"metadata value with newline", objstore.PutOptions{Metadata: map[string]string{"records": "1\n2"}}},
		{"metadata value with surrounding space", objstore.PutOptions{Metadata: map[string]string{"records": " 1"}}},
		{"non-ASCII metadata value", objstore.PutOptions{Metadata: map[string]string{"name": "Zürich"}}},
		{"metadata over 2 KiB", objstore.PutOptions{Metadata: map[string]string{"big": strings.Repeat("x", 2048)}}},
		{"content type with CRLF", objstore.PutOptions{ContentType: "text/csv\r\nX-Evil: 1"}},
		{"content disposition with newline", objstore.PutOptions{ContentDisposition: "attachment;\n filename=a.csv"}},
	}
	eachBackend(t, func(t *testing.T, b backend) {
		for _, tt := range tests {
			if _, err := b.store.Put(context.Background(), "exports/x.csv", strings.NewReader("x"), tt.opts); err == nil {
				t.Errorf("%s: Put succeeded, want an error", tt.name)
			}
		}
		assertNotFound(t, b.store, "exports/x.csv")
	})
}

// TestPutMemoryBounded runs alone (no t.Parallel) so that the allocation count is Put's.
func TestPutMemoryBounded(t *testing.T) {
	const size = 64 << 20
	for _, be := range allBackends {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			mustPut(t, b.store, "exports/big.csv", newBody(size, 3), objstore.PutOptions{})
			runtime.ReadMemStats(&after)
			// Everything Put allocated, garbage included; a buffered body alone would be 64 MiB.
			allocated := int64(after.TotalAlloc - before.TotalAlloc)
			if limit := b.buffered + 4<<20; allocated > limit {
				t.Errorf("Put of %d MiB allocated %.1f MiB, want at most %.1f MiB", size>>20, mib(allocated), mib(limit))
			}
			t.Logf("Put of %d MiB allocated %.1f MiB", size>>20, mib(allocated))
		})
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func BenchmarkPut(b *testing.B) {
	const size = 64 << 20
	for _, be := range allBackends {
		b.Run(be.name, func(b *testing.B) {
			s := be.new(b)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				mustPut(b, s.store, "bench.csv", newBody(size, 1), objstore.PutOptions{})
			}
		})
	}
}
