package kittest

import (
	"strings"
	"testing"
)

// Refusal is a GET the API must refuse: its path, the status of the answer and a part of the
// answer's message ("" checks the status alone).
type Refusal struct {
	Path    string
	Status  int
	Message string
}

// CheckRefusals GETs each refusal's path through the contract's check, in a subtest of its own, and
// fails it unless the answer has the refusal's status and message.
func (s *Stack) CheckRefusals(t *testing.T, refusals []Refusal) {
	t.Helper()
	for _, r := range refusals {
		t.Run(r.Path, func(t *testing.T) {
			rec := s.Get(t, r.Path)
			if rec.Code != r.Status || !strings.Contains(rec.Body.String(), r.Message) {
				t.Fatalf("GET %s = %d %s, want %d with %q", r.Path, rec.Code, rec.Body, r.Status, r.Message)
			}
		})
	}
}
