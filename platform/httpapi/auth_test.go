package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/fault"
	"github.com/tidemark/tidemark/platform/httpapi"
)

type callerKey struct{}

// TestAuthenticate: an authenticated route's handler runs only for the requests its authenticator
// accepts, and sees what the authenticator put in the context; refusals come before any other check
// of the request, 401s with the challenge and the error field, and answers are not for shared caches.
func TestAuthenticate(t *testing.T) {
	const challenge = `Signature realm="test"`
	auth := func(r *http.Request) (context.Context, error) {
		switch r.Header.Get("x-key") {
		case "":
			return nil, fault.Errorf(fault.Unauthorized, "missing header x-key")
		case "alice":
			return context.WithValue(r.Context(), callerKey{}, "alice"), nil
		case "mallory":
			return nil, fault.Errorf(fault.Forbidden, "mallory may not")
		default:
			return nil, fault.Errorf(fault.Unauthorized, "unknown key")
		}
	}
	ran := 0
	a := httpapi.New(httpapi.Options{})
	a.Handle(http.MethodGet, "/private/{id}", func(r *http.Request) (any, error) {
		ran++
		return map[string]any{"caller": r.Context().Value(callerKey{})}, nil
	}, httpapi.Authenticate(challenge, auth))
	srv := mustServe(t, a)

	do := func(path, key string) response {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("x-key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{status: resp.StatusCode, header: resp.Header, body: string(body)}
	}

	tests := []struct {
		name, path, key string
		status          int
		message         string
	}{
		{"no credentials", "/private/1", "", 401, "missing header x-key"},
		{"bad credentials", "/private/1", "eve", 401, "unknown key"},
		{"refused before the path is checked", "/private/%00", "", 401, "missing header x-key"},
		{"forbidden", "/private/1", "mallory", 403, "mallory may not"},
		{"accepted, then the path is checked", "/private/%00", "alice", 400, "path segment id must be printable UTF-8 of at most 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(tt.path, tt.key)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if _, msg := errorEnvelope(t, r); msg != tt.message {
				t.Errorf("message %q, want %q", msg, tt.message)
			}
			if got, want := r.header.Get("WWW-Authenticate"), map[bool]string{true: challenge}[tt.status == 401]; got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
		})
	}
	if ran != 0 {
		t.Fatalf("the handler ran %d times for refused requests", ran)
	}
	r := do("/private/1", "alice")
	if r.status != 200 || r.body != `{"caller":"alice"}`+"\n" {
		t.Fatalf("accepted request: %d %s", r.status, r.body)
	}
	if got := r.header.Get("Cache-Control"); got != "private, no-store" {
		t.Errorf("Cache-Control %q, want private, no-store", got)
	}
}

// An authenticated route cannot share its answers between callers.
func TestAuthenticateRefusesSharing(t *testing.T) {
	auth := func(r *http.Request) (context.Context, error) { return r.Context(), nil }
	ok := func(*http.Request) (any, error) { return nil, nil }
	for name, opt := range map[string]httpapi.RouteOption{
		"SharedCache": httpapi.SharedCache(time.Second, 1<<20),
		"Coalesce":    httpapi.Coalesce(),
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle accepted Authenticate with %s", name)
				}
			}()
			httpapi.New(httpapi.Options{}).Handle(http.MethodGet, "/x", ok, httpapi.Authenticate("", auth), opt)
		})
	}
}
