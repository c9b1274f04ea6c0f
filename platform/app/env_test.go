package app_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/app"
)

func mapEnv(vars map[string]string) *app.Env {
	return &app.Env{Prefix: "T_", Lookup: func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}}
}

func TestEnvValues(t *testing.T) {
	e := mapEnv(map[string]string{
		"T_NAME":   "market",
		"T_N":      "42",
		"T_D":      "1m30s",
		"T_B":      "true",
		"T_LIST":   " a:9092, b:9092,, ",
		"T_KEY":    "secret",
		"T_EMPTY":  "",
		"T_BLANKS": " , ",
		"NAME":     "unprefixed is ignored",
		"T_SPACED": "  padded  ",
		"T_LEVEL":  "warn",
	})
	tests := []struct {
		name      string
		got, want any
	}{
		{"string", e.String("NAME", "x"), "market"},
		{"string default", e.String("MISSING", "x"), "x"},
		{"empty is unset", e.String("EMPTY", "x"), "x"},
		{"trimmed", e.String("SPACED", ""), "padded"},
		{"int", e.Int("N", 1), 42},
		{"int default", e.Int("MISSING", 7), 7},
		{"duration", e.Duration("D", time.Second), 90 * time.Second},
		{"bool", e.Bool("B", false), true},
		{"strings", fmt.Sprint(e.Strings("LIST", nil)), "[a:9092 b:9092]"},
		{"strings only blanks", fmt.Sprint(e.Strings("BLANKS", []string{"d"})), "[d]"},
		{"bytes", string(e.Bytes("KEY", nil)), "secret"},
		{"parse", app.Parse(e, "LEVEL", slog.LevelInfo, "a level", func(s string) (slog.Level, error) {
			var l slog.Level
			return l, l.UnmarshalText([]byte(s))
		}), slog.LevelWarn},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if err := e.Err(); err != nil {
		t.Errorf("Err = %v", err)
	}
}

func TestEnvErrorsCollected(t *testing.T) {
	e := mapEnv(map[string]string{"T_N": "forty", "T_D": "soon", "T_B": "maybe", "T_OK": "3"})
	if got := e.Int("N", 5); got != 5 {
		t.Errorf("bad int gives %d, want the default", got)
	}
	if got := e.Duration("D", time.Second); got != time.Second {
		t.Errorf("bad duration gives %v", got)
	}
	if got := e.Bool("B", true); !got {
		t.Errorf("bad bool gives %v", got)
	}
	if got := e.Int("OK", 0); got != 3 {
		t.Errorf("good int after bad ones = %d", got)
	}
	err := e.Err()
	if err == nil {
		t.Fatal("Err = nil")
	}
	for _, want := range []string{`T_N="forty"`, `T_D="soon"`, `T_B="maybe"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err %q lacks %s", err, want)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
		t.Errorf("want 3 joined errors, got %v", err)
	}
}

func TestLoadConfig(t *testing.T) {
	key := strings.Repeat("k", 32)
	tests := []struct {
		name    string
		vars    map[string]string
		wantErr []string
		check   func(t *testing.T, c app.Config)
	}{
		{
			name: "defaults with a key",
			vars: map[string]string{"TIDEMARK_PAGE_KEY": key},
			check: func(t *testing.T, c app.Config) {
				if c.Service != "market" || c.PublicAddr != ":8080" || c.InternalAddr != ":9090" ||
					c.ShutdownTimeout != 20*time.Second || c.LogLevel != slog.LevelInfo || c.Dev ||
					c.OTLPEndpoint != "" || c.KafkaBrokers != nil || string(c.PageKey) != key {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "everything set",
			vars: map[string]string{
				"TIDEMARK_PUBLIC_ADDR": "127.0.0.1:1", "TIDEMARK_INTERNAL_ADDR": "127.0.0.1:2",
				"TIDEMARK_SHUTDOWN_TIMEOUT": "5s", "TIDEMARK_LOG_LEVEL": "debug",
				"TIDEMARK_OTLP_ENDPOINT": "http://collector:4318",
				"TIDEMARK_KAFKA_BROKERS": "k1:9092,k2:9092", "TIDEMARK_PAGE_KEY": key,
			},
			check: func(t *testing.T, c app.Config) {
				if c.PublicAddr != "127.0.0.1:1" || c.InternalAddr != "127.0.0.1:2" || c.ShutdownTimeout != 5*time.Second ||
					c.LogLevel != slog.LevelDebug || c.OTLPEndpoint != "http://collector:4318" ||
					fmt.Sprint(c.KafkaBrokers) != "[k1:9092 k2:9092]" {
					t.Errorf("config = %+v", c)
				}
			},
		},
		{
			name: "dev generates a random key",
			vars: map[string]string{"TIDEMARK_DEV": "true"},
			check: func(t *testing.T, c app.Config) {
				if !c.Dev || len(c.PageKey) != 32 {
					t.Errorf("dev config = %+v", c)
				}
			},
		},
		{name: "production needs a key", vars: map[string]string{}, wantErr: []string{"TIDEMARK_PAGE_KEY is required"}},
		{name: "short key", vars: map[string]string{"TIDEMARK_PAGE_KEY": "short"}, wantErr: []string{"at least 32 bytes"}},
		{
			name: "every problem reported at once",
			vars: map[string]string{
				"TIDEMARK_SHUTDOWN_TIMEOUT": "never", "TIDEMARK_LOG_LEVEL": "loud", "TIDEMARK_DEV": "yes please",
				"TIDEMARK_OTLP_ENDPOINT": "collector:4318", "TIDEMARK_PUBLIC_ADDR": ":7000", "TIDEMARK_INTERNAL_ADDR": ":7000",
			},
			wantErr: []string{"TIDEMARK_SHUTDOWN_TIMEOUT", "TIDEMARK_LOG_LEVEL", "TIDEMARK_DEV", "TIDEMARK_OTLP_ENDPOINT",
				"both :7000", "TIDEMARK_PAGE_KEY is required"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) {
				v, ok := tt.vars[k]
				return v, ok
			}}
			c, err := app.LoadConfig(env, "market")
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				tt.check(t, c)
				return
			}
			if err == nil {
				t.Fatal("err = nil")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("TIDEMARK_PAGE_KEY", strings.Repeat("z", 40))
	t.Setenv("TIDEMARK_KAFKA_BROKERS", "a:1, b:2")
	c, err := app.ConfigFromEnv("stats")
	if err != nil {
		t.Fatal(err)
	}
	if c.Service != "stats" || fmt.Sprint(c.KafkaBrokers) != "[a:1 b:2]" {
		t.Errorf("config = %+v", c)
	}
}

// TestLoadConfigWithoutPageKey: a deployable that pages nothing starts without a key and does not
// list PAGE_KEY or DEV among its variables.
func TestLoadConfigWithoutPageKey(t *testing.T) {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"TIDEMARK_DEV": "not read", "TIDEMARK_PAGE_KEY": "short"}[k]
		return v, ok
	}}
	c, err := app.LoadConfig(env, "ws", app.WithoutPageKey())
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if !c.NoPageKey || c.PageKey != nil || c.Dev {
		t.Errorf("config = %+v", c)
	}
	for _, v := range env.Vars() {
		if v.Name == "TIDEMARK_PAGE_KEY" || v.Name == "TIDEMARK_DEV" {
			t.Errorf("%s was read", v.Name)
		}
	}
}

// TestLoadConfigWithoutKafka: a deployable that uses no broker does not list KAFKA_BROKERS among its
// variables, so the chart gives it neither the brokers nor an egress to them.
func TestLoadConfigWithoutKafka(t *testing.T) {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"TIDEMARK_KAFKA_BROKERS": "kafka:9092"}[k]
		return v, ok
	}}
	c, err := app.LoadConfig(env, "tx", app.WithoutPageKey(), app.WithoutKafka())
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	if c.KafkaBrokers != nil {
		t.Errorf("brokers = %v", c.KafkaBrokers)
	}
	for _, v := range env.Vars() {
		if v.Name == "TIDEMARK_KAFKA_BROKERS" {
			t.Errorf("%s was read", v.Name)
		}
	}
}

// TestNewEnvReadsTheProcess: an Env from NewEnv reads the process environment, through its methods
// and its Lookup alike (the operator's settings call Lookup for the pod's namespace).
func TestNewEnvReadsTheProcess(t *testing.T) {
	t.Setenv("TIDEMARK_TEST_NEWENV", "x")
	t.Setenv("POD_NAMESPACE_TEST", "ns")
	e := app.NewEnv(app.EnvPrefix)
	if got := e.String("TEST_NEWENV", ""); got != "x" {
		t.Errorf("String = %q", got)
	}
	if v, ok := e.Lookup("POD_NAMESPACE_TEST"); !ok || v != "ns" {
		t.Errorf("Lookup = %q, %v", v, ok)
	}
}
