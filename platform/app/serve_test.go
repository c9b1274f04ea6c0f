package app_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

func mustListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func TestServeDrainsInFlightRequest(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "drained")
	})
	ln := mustListen(t)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- app.ServeListener(ctx, ln, h, 10*time.Second, nil) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{body: string(b), err: err}
	}()

	<-entered
	cancel()
	// Shutdown closes the listener first: wait for new connections to be refused, proving the server
	// is shutting down while the request is still in flight.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("listener still accepting after cancel")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v before the in-flight request finished", err)
	default:
	}

	close(release)
	r := <-got
	if r.err != nil || r.body != "drained" {
		t.Fatalf("in-flight request: %q %v", r.body, r.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil after a clean drain", err)
	}
}

func TestServeShutdownTimeout(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})
	ln := mustListen(t)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- app.ServeListener(ctx, ln, h, 50*time.Millisecond, nil) }()
	go func() {
		if resp, err := http.Get("http://" + addr + "/stuck"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	cancel()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Errorf("Serve = %v, want a shutdown deadline error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not give up on the stuck request")
	}
}

func TestServeListenError(t *testing.T) {
	ln := mustListen(t)
	defer ln.Close()
	err := app.Serve(context.Background(), ln.Addr().String(), http.NotFoundHandler(), time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "listen on") {
		t.Errorf("Serve on a busy address = %v", err)
	}
}
