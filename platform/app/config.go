package app

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// EnvPrefix prefixes every tidemark environment variable.
const EnvPrefix = "TIDEMARK_"

// minPageKeyLen is the shortest page-token key accepted: HMAC-SHA256 wants at least 32 bytes of key.
const minPageKeyLen = 32

// Config is what every tidemark deployable reads from its environment; a service reads its own extra
// variables with the same Env.
type Config struct {
	// Service names the process in logs, traces and its Postgres schema.
	Service string
	// PublicAddr is the API listener (TIDEMARK_PUBLIC_ADDR, default ":8080").
	PublicAddr string
	// InternalAddr serves /healthz, /readyz, /metrics (TIDEMARK_INTERNAL_ADDR, default ":9090").
	InternalAddr string
	// ShutdownTimeout bounds the drain of in-flight requests (TIDEMARK_SHUTDOWN_TIMEOUT, default 20s).
	ShutdownTimeout time.Duration
	// LogLevel is debug, info, warn or error (TIDEMARK_LOG_LEVEL, default info).
	LogLevel slog.Level
	// OTLPEndpoint is the OTLP/HTTP collector URL; empty disables trace export (TIDEMARK_OTLP_ENDPOINT).
	OTLPEndpoint string
	// KafkaBrokers are host:port seed brokers (TIDEMARK_KAFKA_BROKERS, comma-separated).
	KafkaBrokers []string
	// PageKey signs page tokens; all replicas of a service share it (TIDEMARK_PAGE_KEY, >= 32 bytes).
	PageKey []byte
	// Dev relaxes production requirements (TIDEMARK_DEV=true): without TIDEMARK_PAGE_KEY a random
	// per-process key is generated, so page tokens do not survive a restart. No key is ever built in.
	Dev bool
	// NoPageKey marks a deployable that signs no page tokens (the WebSocket edge): PAGE_KEY and DEV
	// are neither read nor required. Set by the WithoutPageKey option of LoadConfig.
	NoPageKey bool
	// NoKafka marks a deployable that uses no broker (the tx service): KAFKA_BROKERS is neither read
	// nor listed, so the chart gives it no broker address and its NetworkPolicy no way to one. Set by
	// the WithoutKafka option of LoadConfig.
	NoKafka bool
}

// ConfigOption adjusts what LoadConfig reads.
type ConfigOption func(*Config)

// WithoutPageKey is for a deployable that pages nothing: it reads neither PAGE_KEY nor DEV, so its
// configuration lists only what it uses.
func WithoutPageKey() ConfigOption { return func(c *Config) { c.NoPageKey = true } }

// WithoutKafka is for a deployable that neither consumes nor produces: it does not read
// KAFKA_BROKERS.
func WithoutKafka() ConfigOption { return func(c *Config) { c.NoKafka = true } }

// ConfigFromEnv reads the TIDEMARK_ variables of the process and validates the result. The error joins
// every unparsable variable and every validation failure.
func ConfigFromEnv(service string) (Config, error) {
	return LoadConfig(NewEnv(EnvPrefix), service)
}

// LoadConfig is ConfigFromEnv over any Env (tests give one a Lookup).
func LoadConfig(env *Env, service string, opts ...ConfigOption) (Config, error) {
	c := Config{
		Service:         service,
		PublicAddr:      env.String("PUBLIC_ADDR", ":8080"),
		InternalAddr:    env.String("INTERNAL_ADDR", ":9090"),
		ShutdownTimeout: env.Duration("SHUTDOWN_TIMEOUT", 20*time.Second),
		LogLevel:        Parse(env, "LOG_LEVEL", slog.LevelInfo, "debug, info, warn or error", parseLevel),
		OTLPEndpoint:    env.String("OTLP_ENDPOINT", ""),
	}
	for _, o := range opts {
		o(&c)
	}
	if !c.NoKafka {
		c.KafkaBrokers = env.Strings("KAFKA_BROKERS", nil)
	}
	if !c.NoPageKey {
		c.PageKey = env.Bytes("PAGE_KEY", nil)
		c.Dev = env.Bool("DEV", false)
	}
	if len(c.PageKey) == 0 && c.Dev {
		c.PageKey = make([]byte, minPageKeyLen)
		_, _ = rand.Read(c.PageKey) // crypto/rand.Read never returns an error.
	}
	if err := errors.Join(env.Err(), c.Validate()); err != nil {
		return c, fmt.Errorf("%s configuration: %w", service, err)
	}
	return c, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}

// Validate reports every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Service == "" {
		errs = append(errs, errors.New("service name is empty"))
	}
	if c.PublicAddr == "" {
		errs = append(errs, errors.New(EnvPrefix+"PUBLIC_ADDR is empty"))
	}
	if c.InternalAddr == "" {
		errs = append(errs, errors.New(EnvPrefix+"INTERNAL_ADDR is empty"))
	}
	// ":0" twice is fine: each listener gets its own free port.
	if c.PublicAddr != "" && c.PublicAddr == c.InternalAddr && !strings.HasSuffix(c.PublicAddr, ":0") {
		errs = append(errs, fmt.Errorf("public and internal addresses are both %s", c.PublicAddr))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf(EnvPrefix+"SHUTDOWN_TIMEOUT must be positive, got %s", c.ShutdownTimeout))
	}
	if c.OTLPEndpoint != "" {
		if u, err := url.Parse(c.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf(EnvPrefix+"OTLP_ENDPOINT %q must be an http(s) URL such as http://collector:4318", c.OTLPEndpoint))
		}
	}
	switch {
	case c.NoPageKey:
	case len(c.PageKey) == 0:
		errs = append(errs, errors.New(EnvPrefix+"PAGE_KEY is required (or set "+EnvPrefix+"DEV=true for a random per-process key)"))
	case len(c.PageKey) < minPageKeyLen:
		errs = append(errs, fmt.Errorf(EnvPrefix+"PAGE_KEY must be at least %d bytes, got %d", minPageKeyLen, len(c.PageKey)))
	}
	return errors.Join(errs...)
}
