// Package app is the runtime every cmd/<service>/main.go shares: configuration from the environment,
// a run group of long-running members, HTTP serving with graceful shutdown and the internal
// (health, readiness, metrics) mux.
package app

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Env reads prefixed environment variables. A variable that is unset or empty yields the default; one
// that does not parse yields the default too and records an error, so that one Err call reports every
// bad variable at once. The zero Env reads the process environment without a prefix.
type Env struct {
	Prefix string
	// Lookup replaces os.LookupEnv (tests pass a map); nil means the process environment.
	Lookup func(name string) (string, bool)
	errs   []error
	vars   []Var
}

// Var is a variable an Env was asked for, with the default it had.
type Var struct {
	Name    string // with the prefix: TIDEMARK_INGEST_WRITERS
	Default string // "" when empty
}

// Vars lists every variable read so far, in the order they were first read: what a deployable reads
// is what its configuration code asks for, so the list is complete once the configuration is loaded.
func (e *Env) Vars() []Var { return e.vars }

func (e *Env) note(name string, def any) {
	key := e.Prefix + name
	for _, v := range e.vars {
		if v.Name == key {
			return
		}
	}
	d := fmt.Sprint(def)
	switch def := def.(type) {
	case []string:
		d = strings.Join(def, ",")
	case []byte:
		d = string(def)
	}
	if def == nil {
		d = ""
	}
	e.vars = append(e.vars, Var{Name: key, Default: d})
}

// NewEnv reads the process environment with prefix, e.g. "TIDEMARK_".
func NewEnv(prefix string) *Env {
	return &Env{Prefix: prefix, Lookup: os.LookupEnv}
}

func (e *Env) value(name string) (key, val string, ok bool) {
	key = e.Prefix + name
	lookup := e.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	val, ok = lookup(key)
	val = strings.TrimSpace(val)
	return key, val, ok && val != ""
}

func (e *Env) fail(key, val, want string) {
	e.errs = append(e.errs, fmt.Errorf("%s=%q: want %s", key, val, want))
}

// String returns the variable's value or def.
func (e *Env) String(name, def string) string {
	e.note(name, def)
	if _, v, ok := e.value(name); ok {
		return v
	}
	return def
}

// Int returns the variable as a base-10 int or def.
func (e *Env) Int(name string, def int) int {
	e.note(name, def)
	key, v, ok := e.value(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.fail(key, v, "an integer")
		return def
	}
	return n
}

// Duration returns the variable as a Go duration ("20s", "1m30s") or def.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	e.note(name, def)
	key, v, ok := e.value(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.fail(key, v, "a duration such as 20s")
		return def
	}
	return d
}

// Bool returns the variable as a boolean (strconv.ParseBool: 1, t, true, 0, f, false, ...) or def.
func (e *Env) Bool(name string, def bool) bool {
	e.note(name, def)
	key, v, ok := e.value(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(key, v, "true or false")
		return def
	}
	return b
}

// Strings returns the comma-separated items of the variable, trimmed, empty items dropped, or def.
func (e *Env) Strings(name string, def []string) []string {
	e.note(name, def)
	_, v, ok := e.value(name)
	if !ok {
		return def
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// Bytes returns the variable's raw bytes or def; it suits secrets such as HMAC keys, whose text form
// (for instance `openssl rand -hex 32`) is itself the key.
func (e *Env) Bytes(name string, def []byte) []byte {
	e.note(name, def)
	if _, v, ok := e.value(name); ok {
		return []byte(v)
	}
	return def
}

// Parse parses the variable with parse, recording its error; it serves types Env has no method for.
func Parse[T any](e *Env, name string, def T, want string, parse func(string) (T, error)) T {
	e.note(name, def)
	key, v, ok := e.value(name)
	if !ok {
		return def
	}
	t, err := parse(v)
	if err != nil {
		e.fail(key, v, want)
		return def
	}
	return t
}

// Err reports every variable that failed to parse so far, nil if none.
func (e *Env) Err() error {
	return errors.Join(e.errs...)
}
