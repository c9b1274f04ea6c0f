package kittest

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Answer is an HTTP answer read to its end.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Trailer is what came after the body (an export stream's record count, say).
	Trailer http.Header
}

// Fetch sends a method request for url over a real connection, with header lines "Name: value"
// added, and reads the answer to its end; it fails the test when the request cannot be made or the
// body cannot be read (a stream aborted midway, say), whatever the status.
func Fetch(t testing.TB, method, url string, header ...string) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b, Trailer: resp.Trailer}
}
