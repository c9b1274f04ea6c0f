package bufconn_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/bufconn"
)

// listen accepts one connection on loopback and hands it to serve.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c)
	}()
	return l.Addr().String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := bufconn.Dialer(nil)(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, ok := c.(*bufconn.Conn); !ok {
		t.Fatalf("Dialer returned %T, want *bufconn.Conn", c)
	}
	return c
}

// TestReadsEveryByteInOrder reads a stream larger than the buffer through reads of every size a
// client library makes: smaller than the buffer, equal to it, and larger.
func TestReadsEveryByteInOrder(t *testing.T) {
	want := make([]byte, 3*bufconn.Size+12345)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	for _, size := range []int{1, 4096, 8192, bufconn.Size, bufconn.Size + 1, 1 << 20} {
		t.Run("", func(t *testing.T) {
			addr := listen(t, func(c net.Conn) {
				for rest := want; len(rest) > 0; {
					n := min(len(rest), 10_000) // the stream arrives in pieces
					if _, err := c.Write(rest[:n]); err != nil {
						return
					}
					rest = rest[n:]
				}
			})
			c := dial(t, addr)
			var got bytes.Buffer
			buf := make([]byte, size)
			for got.Len() < len(want) {
				n, err := c.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					t.Fatalf("after %d bytes: %v", got.Len(), err)
				}
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("reads of %d bytes: the stream differs", size)
			}
		})
	}
}

// TestDeadlinesReachTheConnection: a read with nothing buffered waits on the connection and its
// deadline, which clients use to give up and to cancel.
func TestDeadlinesReachTheConnection(t *testing.T) {
	hold := make(chan struct{})
	addr := listen(t, func(c net.Conn) {
		c.Write([]byte("hello"))
		<-hold
	})
	defer close(hold)
	c := dial(t, addr)
	got := make([]byte, 5)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.Read(got)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the deadline took %s to end the read", d)
	}
}

func TestDialErrorsPassThrough(t *testing.T) {
	failed := errors.New("no route")
	d := bufconn.Dialer(func(context.Context, string, string) (net.Conn, error) { return nil, failed })
	if c, err := d(context.Background(), "tcp", "127.0.0.1:1"); !errors.Is(err, failed) || c != nil {
		t.Fatalf("dial: %v, %v; want the dialer's error and no connection", c, err)
	}
}
