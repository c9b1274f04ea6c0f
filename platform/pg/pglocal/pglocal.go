// Package pglocal runs a throwaway (or persistent) PostgreSQL cluster from the binaries installed
// on the machine, for tests and the one-command dev stack.
package pglocal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configure Start.
type Options struct {
	// Dir is the data directory. Empty means a temporary cluster removed by Stop; otherwise an
	// existing cluster in Dir is reused and a missing one is created. As root, the "postgres"
	// user must be able to traverse Dir's parents.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Durable keeps fsync, synchronous_commit and full_page_writes on. Off (the default) suits
	// tests, where losing the cluster in a machine crash does not matter.
	Durable bool
	// Logger receives the server's own log lines at debug level; nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds waiting for the server to accept connections (default 60s).
	StartTimeout time.Duration
}

// Server is a running (or paused) PostgreSQL cluster owned by this process.
type Server struct {
	opts    Options
	binDir  string
	baseDir string // temp dir to remove on Stop; "" for a persistent Dir
	dataDir string
	port    int
	cred    *syscall.Credential
	logger  *slog.Logger

	mu   sync.Mutex
	proc *exec.Cmd
	done chan struct{} // closed when proc exits
	tail *logTail
}

const superuser = "postgres"

// Start initialises the cluster when needed, starts postgres on 127.0.0.1 and waits until it
// accepts connections. As root, initdb and postgres run as the "postgres" OS user because
// PostgreSQL refuses to run as root.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, binDir: binDir, logger: logger, port: opts.Port}
	if os.Geteuid() == 0 {
		if s.cred, err = lookupCredential(superuser); err != nil {
			return nil, err
		}
	}
	if err := s.prepareDir(); err != nil {
		_ = s.removeTemp()
		return nil, err
	}
	if err := s.initdb(ctx); err != nil {
		_ = s.removeTemp()
		return nil, err
	}
	// A free port found here can be taken by someone else before postgres binds it; try again.
	for attempt := 0; ; attempt++ {
		if opts.Port == 0 {
			if s.port, err = freePort(); err != nil {
				_ = s.removeTemp()
				return nil, err
			}
		}
		err = s.start(ctx)
		if err == nil {
			return s, nil
		}
		if opts.Port != 0 || attempt >= 2 || ctx.Err() != nil || !strings.Contains(err.Error(), "could not bind") {
			_ = s.removeTemp()
			return nil, err
		}
	}
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// DataDir is the cluster's data directory.
func (s *Server) DataDir() string { return s.dataDir }

// URL is a connection URL for database db as the superuser (trust authentication).
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, db)
}

// CreateDatabase creates database name and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	if err := s.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("pglocal: create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// DropDatabase drops database name, disconnecting its sessions.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	if err := s.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("pglocal: drop database %s: %w", name, err)
	}
	return nil
}

func (s *Server) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

// Pause stops the server (fast shutdown) and keeps its data and port for Resume.
func (s *Server) Pause() error {
	return s.stopProcess()
}

// Resume starts a paused server again on the same port and data directory.
func (s *Server) Resume(ctx context.Context) error {
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		return nil
	}
	return s.start(ctx)
}

// Crash stops the server as a power cut or `pg_ctl stop -m immediate` would: no checkpoint, and
// commits not yet flushed (synchronous_commit off, the default here) are lost. Resume starts it
// again, recovering from its WAL.
func (s *Server) Crash() error {
	return s.signalStop(syscall.SIGQUIT)
}

// Backup takes a base backup of the running cluster (pg_basebackup, with the WAL it needs) into a
// new folder beside the data directory and returns that folder: the cluster as of now, for Restore.
func (s *Server) Backup(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp(filepath.Dir(s.dataDir), "backup-")
	if err != nil {
		return "", fmt.Errorf("pglocal: backup folder: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return "", fmt.Errorf("pglocal: chown %s: %w", dir, err)
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "pg_basebackup"),
		"-D", dir, "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", superuser,
		"--checkpoint=fast", "--wal-method=stream", "--no-sync")
	s.setup(cmd)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("pglocal: pg_basebackup: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return dir, nil
}

// Restore crashes the server, puts its data directory back to backup (taken by Backup, and used
// up here) and starts it: the cluster as a failover to a replica that lagged, or a restore from a
// backup, leaves it. What was committed after the backup is gone.
func (s *Server) Restore(ctx context.Context, backup string) error {
	if err := s.Crash(); err != nil {
		return err
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		return fmt.Errorf("pglocal: remove %s: %w", s.dataDir, err)
	}
	if err := os.Rename(backup, s.dataDir); err != nil {
		return fmt.Errorf("pglocal: restore %s: %w", backup, err)
	}
	return s.start(ctx)
}

// Stop shuts the server down and removes a temporary data directory.
func (s *Server) Stop() error {
	err := s.stopProcess()
	if rmErr := s.removeTemp(); rmErr != nil && err == nil {
		err = rmErr
	}
	return err
}

func (s *Server) removeTemp() error {
	if s.baseDir == "" {
		return nil
	}
	if err := os.RemoveAll(s.baseDir); err != nil {
		return fmt.Errorf("pglocal: remove %s: %w", s.baseDir, err)
	}
	return nil
}

const (
	tempPrefix = "pglocal-"
	ownerFile  = "owner.pid"
)

// removeStale deletes temporary clusters whose owning process died without Stop (a test binary
// killed by its timeout, say); their servers went down with it (Pdeathsig). Best effort.
func removeStale(logger *slog.Logger) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			logger.Debug("removed stale cluster", "dir", dir, "owner", pid)
		}
	}
}

func findBinDir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first; compare numerically so 9 sorts below 15.
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("pglocal: no PostgreSQL binaries found (pg_config, /usr/lib/postgresql/*/bin, PATH)")
}

func majorOf(binDir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	return v
}

func lookupCredential(name string) (*syscall.Credential, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pglocal: running as root needs the %q OS user: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: uid of %s: %w", name, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pglocal: gid of %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (s *Server) prepareDir() error {
	if s.opts.Dir == "" {
		removeStale(s.logger)
		base, err := os.MkdirTemp("", tempPrefix)
		if err != nil {
			return fmt.Errorf("pglocal: temp dir: %w", err)
		}
		s.baseDir = base
		s.dataDir = filepath.Join(base, "data")
		// The server user must be able to traverse the (root-owned, 0700) temp dir.
		if err := os.Chmod(base, 0o755); err != nil {
			return fmt.Errorf("pglocal: chmod %s: %w", base, err)
		}
		if err := os.WriteFile(filepath.Join(base, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return fmt.Errorf("pglocal: %w", err)
		}
	} else {
		dir, err := filepath.Abs(s.opts.Dir)
		if err != nil {
			return fmt.Errorf("pglocal: data dir: %w", err)
		}
		s.dataDir = dir
	}
	// Parents we create must be traversable by the server user; the data dir itself is private.
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return fmt.Errorf("pglocal: create %s: %w", filepath.Dir(s.dataDir), err)
	}
	if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
		return fmt.Errorf("pglocal: create %s: %w", s.dataDir, err)
	}
	if s.cred != nil {
		uid, gid := int(s.cred.Uid), int(s.cred.Gid)
		err := filepath.WalkDir(s.dataDir, func(p string, _ os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, gid)
		})
		if err != nil {
			return fmt.Errorf("pglocal: chown %s: %w", s.dataDir, err)
		}
	}
	return nil
}

func (s *Server) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); err == nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, filepath.Join(s.binDir, "initdb"),
		"-D", s.dataDir, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	s.setup(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pglocal: initdb %s: %w: %s", s.dataDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (s *Server) setup(cmd *exec.Cmd) {
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: s.cred,
		// Take the server down with us if this process dies without Stop.
		Pdeathsig: syscall.SIGQUIT,
	}
	if s.cred != nil {
		// The server user cannot read root's working directory.
		cmd.Dir = s.dataDir
	}
}

func (s *Server) start(ctx context.Context) error {
	args := []string{
		"-D", s.dataDir,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + s.dataDir,
		"-c", "max_connections=200",
		"-c", "shared_buffers=128MB",
		"-c", "log_min_messages=warning",
		"-c", "log_line_prefix=",
	}
	if !s.opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(filepath.Join(s.binDir, "postgres"), args...)
	s.setup(cmd)
	out, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("pglocal: %w", err)
	}
	cmd.Stdout = nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pglocal: start postgres: %w", err)
	}
	tail := &logTail{}
	done := make(chan struct{})
	go func() {
		tail.consume(out, s.logger)
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.proc, s.done, s.tail = cmd, done, tail
	s.mu.Unlock()

	if err := s.waitReady(ctx, done); err != nil {
		_ = s.stopProcess()
		return fmt.Errorf("pglocal: postgres on port %d: %w\n%s", s.port, err, tail.String())
	}
	s.logger.Info("postgres started", "port", s.port, "dir", s.dataDir)
	return nil
}

func (s *Server) waitReady(ctx context.Context, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(attempt, s.URL("postgres"))
		cancelAttempt()
		if err == nil {
			_ = conn.Close(ctx)
			return nil
		}
		select {
		case <-done:
			return errors.New("exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopProcess asks for a fast shutdown (SIGINT: abort sessions, checkpoint, exit) and waits.
func (s *Server) stopProcess() error {
	return s.signalStop(syscall.SIGINT)
}

// signalStop sends sig to the postmaster and waits for it to exit.
func (s *Server) signalStop(sig syscall.Signal) error {
	s.mu.Lock()
	cmd, done := s.proc, s.done
	s.proc, s.done = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pglocal: signal postgres: %w", err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("pglocal: postgres did not stop within 30s; killed")
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pglocal: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail forwards the server's log lines and keeps the last few for start-up errors.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (t *logTail) consume(r io.Reader, logger *slog.Logger) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		logger.Debug("postgres", "line", line)
		t.mu.Lock()
		t.lines = append(t.lines, line)
		if len(t.lines) > 20 {
			t.lines = t.lines[1:]
		}
		t.mu.Unlock()
	}
}

func (t *logTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
