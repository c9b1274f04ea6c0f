// Package settings is the operator process' configuration: what it reads from its TIDEMARK_*
// environment, and the list of those variables, from which the chart's operator values are checked.
package settings

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/operator/export"
	"github.com/tidemark/tidemark/platform/app"
	"github.com/tidemark/tidemark/platform/objstore"
)

// Settings are what the operator reads from its environment.
type Settings struct {
	// InternalAddr serves /metrics, /healthz and /readyz (TIDEMARK_INTERNAL_ADDR, default :9090).
	InternalAddr string
	// Namespace is the one whose jobs are run (TIDEMARK_NAMESPACE, default POD_NAMESPACE); empty:
	// every namespace.
	Namespace string
	// LeaderElect runs jobs only on the replica holding the lease (TIDEMARK_LEADER_ELECT, default true).
	LeaderElect bool
	// MaxConcurrent bounds the exports running at once (TIDEMARK_EXPORT_MAX_CONCURRENT, default 4).
	MaxConcurrent int
	// Sources are the services' internal base URLs by file type (TIDEMARK_EXPORT_SOURCES,
	// fileType=url pairs).
	Sources map[v1alpha1.FileType]string
	// S3 is the export bucket (TIDEMARK_S3_* and the cloud's credential variables, see
	// objstore.S3Config.RegisterEnv).
	S3 objstore.S3Config
}

// Load reads the settings from env; the error names every variable that does not parse.
func Load(env *app.Env) (Settings, error) {
	podNamespace, _ := env.Lookup("POD_NAMESPACE")
	s := Settings{
		InternalAddr:  env.String("INTERNAL_ADDR", ":9090"),
		Namespace:     env.String("NAMESPACE", podNamespace),
		LeaderElect:   env.Bool("LEADER_ELECT", true),
		MaxConcurrent: env.Int("EXPORT_MAX_CONCURRENT", 4),
	}
	sources, serr := export.ParseEndpoints(env.String("EXPORT_SOURCES", ""))
	s.Sources = sources
	s.S3.RegisterEnv(env)
	if err := errors.Join(env.Err(), serr); err != nil {
		return s, fmt.Errorf("configuration: %w", err)
	}
	return s, nil
}

// LogLevel is TIDEMARK_LOG_LEVEL (debug, info, warn or error; default info), read before the rest
// so that the logger exists to report it.
func LogLevel(env *app.Env) slog.Level {
	return app.Parse(env, "LOG_LEVEL", slog.LevelInfo, "debug, info, warn or error", func(s string) (slog.Level, error) {
		var l slog.Level
		return l, l.UnmarshalText([]byte(s))
	})
}

// Variables lists every TIDEMARK_* variable the operator reads, with its default.
func Variables() []app.Var {
	env := &app.Env{Prefix: app.EnvPrefix, Lookup: func(string) (string, bool) { return "", false }}
	LogLevel(env)
	_, _ = Load(env)
	return env.Vars()
}
