// Package bufconn gives network connections a large read buffer. Client libraries read through
// small buffers of their own (kafka-go 4 KB, pgx 8 KB), so a 12 MB fetch response or a 25 KB page of
// rows costs a read system call per few kilobytes; behind a large buffer most of those reads are
// copies from memory, and one call fetches whatever the socket holds.
package bufconn

import (
	"bufio"
	"context"
	"net"
)

// Size is the read buffer of a wrapped connection: it holds what loopback and LAN sockets usually
// have queued, and costs little per connection.
const Size = 256 << 10

// Conn is a net.Conn whose reads go through a buffer of Size bytes.
type Conn struct {
	net.Conn
	r *bufio.Reader
}

// Wrap buffers c's reads. Deadlines, writes and Close go to c.
func Wrap(c net.Conn) *Conn {
	return &Conn{Conn: c, r: bufio.NewReaderSize(c, Size)}
}

// Read serves buffered bytes first; with none buffered, one read of c refills the buffer, unless p
// is at least as large (then it reads into p directly).
func (c *Conn) Read(p []byte) (int, error) { return c.r.Read(p) }

// DialFunc is the signature of the dial hooks of pgx and kafka-go. An alias, so that their own
// types (pgconn.DialFunc, a plain func in kafka-go) pass to and from Dialer without conversions.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer wraps the connections dial makes (nil: a net.Dialer).
func Dialer(dial DialFunc) DialFunc {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Wrap(c), nil
	}
}
