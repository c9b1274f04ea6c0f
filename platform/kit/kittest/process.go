package kittest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
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
