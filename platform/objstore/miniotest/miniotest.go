// Package miniotest runs a real MinIO server for tests: one per test package, shared through
// TestMain, with a fresh bucket per test.
//
//	var srv *miniotest.Server
//
//	func TestMain(m *testing.M) { os.Exit(miniotest.Main(m, &srv)) }
//
//	func TestX(t *testing.T) { store := miniotest.NewS3(t, srv); ... }
//
// The binary is $TIDEMARK_MINIO_BIN, else <repo root>/.tools/bin/minio (the repo root being the
// nearest directory above the working directory that holds go.work), else minio on PATH.
// `make testbed` installs it.
package miniotest

import (
	"bytes"
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/objstore"
	"github.com/tidemark/tidemark/platform/testbed"
)

// Server is a running MinIO server owned by this process.
type Server struct {
	// Endpoint is the S3 API's host:port on 127.0.0.1 (plain http).
	Endpoint  string
	AccessKey string
	SecretKey string

	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	dataDir string
	log     *tail
	stop    sync.Once
	stopErr error
}

// Config is the S3 store config for bucket on this server, creating the bucket when missing.
func (s *Server) Config(bucket string) objstore.S3Config {
	return objstore.S3Config{
		Endpoint:     s.Endpoint,
		Bucket:       bucket,
		AccessKey:    s.AccessKey,
		SecretKey:    s.SecretKey,
		CreateBucket: true,
	}
}

// Main starts a server into *srv, runs the tests and stops the server. It returns the exit code
// for os.Exit. Set MINIOTEST_LOG=1 to see the server's output on stderr.
func Main(m *testing.M, srv **Server) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	s, err := Run(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*srv = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Start runs a server for one test (or benchmark) and stops it at cleanup. Prefer Main, which
// shares one server among a package's tests.
func Start(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Run(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// NewBucket returns a bucket name unique to the test; NewS3 and Config create it on first use.
// Buckets are not removed: the server's data goes with it.
func NewBucket(tb testing.TB) string {
	tb.Helper()
	name := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(tb.Name()), "-"), "-")
	suffix := fmt.Sprintf("-%08x", rand.Uint32())
	if max := 63 - len(suffix) - len("t-"); len(name) > max {
		name = strings.TrimRight(name[:max], "-")
	}
	return "t-" + name + suffix
}

// NewS3 returns a store on a fresh bucket of srv (see NewBucket).
func NewS3(tb testing.TB, srv *Server) *objstore.S3 {
	tb.Helper()
	if srv == nil {
		tb.Fatal("miniotest: no server; call miniotest.Main from TestMain or use miniotest.Start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objstore.NewS3(ctx, srv.Config(NewBucket(tb)))
	if err != nil {
		tb.Fatalf("miniotest: %v", err)
	}
	return s
}

// Options change how RunWith starts a server.
type Options struct {
	// OpenID, when set, makes the server's STS trust an OpenID Connect issuer: a token the issuer
	// signed for OpenID.ClientID is exchanged (AssumeRoleWithWebIdentity, role OpenID.RoleARN) for
	// temporary credentials with OpenID.Policy.
	OpenID *OpenID
}

// OpenID is an issuer the server trusts for web identities.
type OpenID struct {
	// ConfigURL is the issuer's discovery document (…/.well-known/openid-configuration); the
	// server reads it and the keys it names when it starts.
	ConfigURL string
	// ClientID is the audience a token must carry.
	ClientID string
	// CA is the PEM of the authority the issuer's certificate chains to, when it is not a system one.
	CA []byte
	// Policy is the role's policy; empty means readwrite.
	Policy string
}

// RoleARN is the role a web identity assumes: MinIO names it after the client ID (a hash of it, so
// that it is stable across restarts).
func (o OpenID) RoleARN() string {
	sum := sha1.Sum([]byte(o.ClientID))
	return "arn:minio:iam:::role/" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// Run starts a server on a free loopback port with a temporary data directory and waits until it
// is ready. Stop it with Stop.
func Run(ctx context.Context) (*Server, error) { return RunWith(ctx, Options{}) }

// RunWith is Run with options.
func RunWith(ctx context.Context, o Options) (*Server, error) {
	bin, err := findBinary()
	if err != nil {
		return nil, err
	}
	// A free port found here can be taken by someone else before MinIO binds it; try again.
	for attempt := 0; ; attempt++ {
		s, err := run(ctx, bin, o)
		if err == nil || attempt >= 2 || ctx.Err() != nil || !strings.Contains(err.Error(), "port is already in use") {
			return s, err
		}
	}
}

func run(ctx context.Context, bin string, o Options) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// The data and the certificates directory (whose CAs folder the server trusts) under one root.
	dataDir, err := os.MkdirTemp("", "miniotest-")
	if err != nil {
		return nil, fmt.Errorf("miniotest: %w", err)
	}
	certsDir := filepath.Join(dataDir, "certs")
	if err := os.MkdirAll(filepath.Join(certsDir, "CAs"), 0o700); err != nil {
		_ = os.RemoveAll(dataDir)
		return nil, fmt.Errorf("miniotest: %w", err)
	}
	s := &Server{
		Endpoint:  net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		AccessKey: "miniotest",
		SecretKey: crand.Text(),
		dataDir:   dataDir,
		log:       &tail{},
		done:      make(chan struct{}),
	}
	var out io.Writer = s.log
	if os.Getenv("MINIOTEST_LOG") != "" {
		out = io.MultiWriter(s.log, os.Stderr)
	}
	cmd := exec.Command(bin, "server", "--address", s.Endpoint, "--quiet", "--certs-dir", certsDir, filepath.Join(dataDir, "data"))
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		// No web console (it would listen on another, random port) and no update checks.
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	if id := o.OpenID; id != nil {
		if len(id.CA) > 0 {
			if err := os.WriteFile(filepath.Join(certsDir, "CAs", "openid.crt"), id.CA, 0o600); err != nil {
				_ = os.RemoveAll(dataDir)
				return nil, fmt.Errorf("miniotest: %w", err)
			}
		}
		cmd.Env = append(cmd.Env,
			"MINIO_IDENTITY_OPENID_CONFIG_URL="+id.ConfigURL,
			"MINIO_IDENTITY_OPENID_CLIENT_ID="+id.ClientID,
			"MINIO_IDENTITY_OPENID_ROLE_POLICY="+cmp.Or(id.Policy, "readwrite"))
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so that Stop reaches any child it forks.
		Setpgid: true,
		// Take the server down with us if the test binary dies without Stop (a timeout panic).
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dataDir)
		return nil, fmt.Errorf("miniotest: start %s: %w", bin, err)
	}
	s.cmd = cmd
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("miniotest: minio on %s: %w\n%s", s.Endpoint, err, s.log.String())
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	url := "http://" + s.Endpoint + "/minio/health/ready"
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		select {
		case <-s.done:
			return errors.New("exited during start-up")
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop terminates the server's process group, waits for it and removes its data. Calling it
// again returns the first result.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		pgid := s.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.done
		}
		if err := os.RemoveAll(s.dataDir); err != nil {
			s.stopErr = fmt.Errorf("miniotest: %w", err)
		}
	})
	return s.stopErr
}

func findBinary() (string, error) {
	if p := os.Getenv("TIDEMARK_MINIO_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("miniotest: TIDEMARK_MINIO_BIN: %w", err)
		}
		return p, nil
	}
	tried := []string{"$TIDEMARK_MINIO_BIN"}
	if dir, err := testbed.Dir(); err == nil {
		p := filepath.Join(dir, "minio")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	tried = append(tried, "minio on PATH")
	return "", fmt.Errorf("miniotest: no MinIO binary (tried %s); run `make testbed` to install it", strings.Join(tried, ", "))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("miniotest: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the last few KiB of the server's output for error messages.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = t.buf[len(t.buf)-tailSize:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
