// Package kafkatest starts the embedded broker as a production cluster is run, for tests of what
// connects to it: TLS with a certificate authority of its own, client certificates, SASL users. The
// files it writes are what a pod gets from a mounted Secret.
package kafkatest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark/tidemark/platform/kafka"
)

// CA is a certificate authority of a test's own, kept in memory, with its certificate in a PEM file.
type CA struct {
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	File   string // the CA certificate, PEM
	serial int64
}

// NewCA creates a CA whose certificate is written under dir.
func NewCA(tb testing.TB, dir, name string) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	ca := &CA{cert: cert, key: key, File: filepath.Join(dir, name+".crt"), serial: 1}
	writePEM(tb, ca.File, "CERTIFICATE", der)
	return ca
}

// Issue signs a certificate for name (a DNS name or an IP address; a client's common name), usable
// by a server and by a client, and writes it and its key under dir: name.crt and name.key.
func (ca *CA) Issue(tb testing.TB, dir, name string) (certFile, keyFile string) {
	tb.Helper()
	key := newKey(tb)
	ca.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ca.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writePEM(tb, certFile, "CERTIFICATE", der)
	writePEM(tb, keyFile, "EC PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// Pool is a certificate pool holding the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Options say how the secured broker is run.
type Options struct {
	// ClientCerts: the broker requires a client certificate signed by its CA.
	ClientCerts bool
	// Mechanism and the one user's name and password; Mechanism empty: no SASL.
	Mechanism, User, Password string
	// Topics to create up front, and their partitions (0: 1).
	Topics     []string
	Partitions int
	// NoAutoCreate: the broker creates no topic on first use, as production clusters run.
	NoAutoCreate bool
	// Users are more SASL users (of Mechanism); EnforceACLs holds them to their ACLs (the one user
	// of User stays a superuser).
	Users       []kafka.EmbeddedUser
	EnforceACLs bool
}

// Broker is a started secured broker and what a client needs to reach it.
type Broker struct {
	*kafka.Embedded
	CA *CA
	// Security is a client's settings that work: the CA file, a client certificate when the broker
	// asks for one, the user's credentials.
	Security kafka.Security
	// Dir holds the files written, for a test's own certificates.
	Dir string
}

// Start starts the embedded broker on 127.0.0.1 with TLS, its certificate signed by a CA of its own,
// and what opts add; it stops with the test.
func Start(tb testing.TB, opts Options) *Broker {
	tb.Helper()
	dir := tb.TempDir()
	ca := NewCA(tb, dir, "kafka-ca")
	certFile, keyFile := ca.Issue(tb, dir, "127.0.0.1")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	sec := kafka.Security{TLS: true, CAFile: ca.File, Mechanism: opts.Mechanism, Username: opts.User, Password: opts.Password}
	if opts.ClientCerts {
		server.ClientAuth, server.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
		sec.CertFile, sec.KeyFile = ca.Issue(tb, dir, "tidemark-client")
	}
	eo := kafka.EmbeddedOptions{TLS: server, Topics: opts.Topics, Partitions: opts.Partitions, NoAutoCreate: opts.NoAutoCreate,
		EnforceACLs: opts.EnforceACLs}
	if opts.Mechanism != "" {
		eo.Users = append([]kafka.EmbeddedUser{{Mechanism: opts.Mechanism, Name: opts.User, Password: opts.Password}}, opts.Users...)
	}
	e, err := kafka.StartEmbedded(context.Background(), eo)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return &Broker{Embedded: e, CA: ca, Security: sec, Dir: dir}
}

// Config is a client configuration of the broker with sec, its files read.
func (b *Broker) Config(tb testing.TB, clientID string, sec kafka.Security) kafka.Config {
	tb.Helper()
	c, err := kafka.Config{Brokers: b.Brokers(), ClientID: clientID}.Secure(sec)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
