package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve listens on addr and serves h until ctx is done, then shuts down gracefully: the listener closes
// at once and in-flight requests get up to shutdownTimeout to finish. It returns nil after a clean
// drain, an error if listening or serving fails or the drain times out (remaining connections are then
// closed).
func Serve(ctx context.Context, addr string, h http.Handler, shutdownTimeout time.Duration, logger *slog.Logger) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ServeListener(ctx, ln, h, shutdownTimeout, logger)
}

// ServeListener is Serve on an existing listener (tests listen on port 0 and read the address first).
// It closes ln.
func ServeListener(ctx context.Context, ln net.Listener, h http.Handler, shutdownTimeout time.Duration, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	addr := ln.Addr().String()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info("http server listening", slog.String("addr", addr))

	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", addr, err)
	case <-ctx.Done():
	}

	logger.Info("http server shutting down", slog.String("addr", addr), slog.Duration("timeout", shutdownTimeout))
	// The parent context is already done; the drain gets its own deadline.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		<-errc
		return fmt.Errorf("shut down %s: %w", addr, err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", addr, err)
	}
	logger.Info("http server stopped", slog.String("addr", addr))
	return nil
}
