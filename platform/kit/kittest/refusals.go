package kittest

import (
	"encoding/json"
	"strings"
	"testing"
)

// Refusal is a GET the API must refuse: its path, the status of the answer and a part of the
// answer's message ("" checks the status alone). A refusal of status 2xx is a request at the edge of
// what is allowed, which the API must answer.
type Refusal struct {
	Path    string
	Status  int
	Message string
}

// Check fails t unless an answer of status with body is the refusal's: its status and, for an error
// status, the API's error envelope (success false) with a message that contains the refusal's.
func (r Refusal) Check(t testing.TB, status int, body []byte) {
	t.Helper()
	if status != r.Status {
		t.Fatalf("GET %s = %d %s, want %d with %q", r.Path, status, body, r.Status, r.Message)
	}
	if status < 300 {
		return
	}
	var e struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Success == nil || *e.Success {
		t.Fatalf("GET %s: not an error envelope: %s", r.Path, body)
	}
	if !strings.Contains(e.Message, r.Message) {
		t.Fatalf("GET %s: message %q does not contain %q", r.Path, e.Message, r.Message)
	}
}

// CheckRefusals GETs each refusal's path through the contract's check, in a subtest of its own, and
// checks the answer (Refusal.Check).
func (s *Stack) CheckRefusals(t *testing.T, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Path, func(t *testing.T) {
			rec := s.Get(t, r.Path)
			r.Check(t, rec.Code, rec.Body.Bytes())
		})
	}
}
