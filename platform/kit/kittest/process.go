package kittest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readyLine is what a helper process prints on its standard output once it is ready.
const readyLine = "ready"

// StartProcess runs this test binary again as a helper process named name, with env added to the
// test's environment: the binary's TestMain tells a helper by env and runs it instead of the tests
// (a replica of a consumer, say, that a test can kill for real). It waits until the helper calls
// AnnounceReady, and kills it at cleanup at the latest.
func StartProcess(tb testing.TB, name string, env ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == readyLine {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			tb.Fatalf("%s exited before it was ready", name)
		}
	case <-time.After(2 * time.Minute):
		tb.Fatalf("%s not ready within two minutes", name)
	}
	return cmd
}

// AnnounceReady tells the test that started this helper process (StartProcess) that it is ready,
// once ready returns nil.
func AnnounceReady(ready func() error) {
	go func() {
		for ready() != nil {
			time.Sleep(20 * time.Millisecond)
		}
		fmt.Println(readyLine)
	}()
}

// Daemon is a command a test runs as its deployment would: a server that runs until it is told to
// stop.
type Daemon struct {
	cmd  *exec.Cmd
	logs strings.Builder // written by one goroutine of exec's at a time
	done chan error
	once sync.Once
	err  error
}

// StartDaemon starts cmd, named name in failures, with its standard output and error gathered, and
// stops it at cleanup at the latest, failing the test with what it logged unless it exited cleanly.
func StartDaemon(tb testing.TB, name string, cmd *exec.Cmd) *Daemon {
	tb.Helper()
	d := &Daemon{cmd: cmd, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = &d.logs, &d.logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	go func() { d.done <- cmd.Wait() }()
	tb.Cleanup(func() {
		if err := d.Stop(); err != nil {
			tb.Errorf("%s: %v\n%s", name, err, d.Logs())
		}
	})
	return d
}

// Stop asks the daemon to stop (SIGTERM) and waits for it to exit, killing it if it has not 30
// seconds later; it returns how it exited, the same to every call.
func (d *Daemon) Stop() error {
	d.once.Do(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case d.err = <-d.done:
		case <-time.After(30 * time.Second):
			_ = d.cmd.Process.Kill()
			d.err = fmt.Errorf("no exit 30 s after SIGTERM: %w", <-d.done)
		}
	})
	return d.err
}

// Logs is what the daemon wrote to its standard output and error; read it once Stop has returned.
func (d *Daemon) Logs() string { return d.logs.String() }
