package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	mskiam "github.com/segmentio/kafka-go/sasl/aws_msk_iam_v2"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/tidemark/tidemark/platform/app"
)

// The SASL mechanisms a deployment may name in TIDEMARK_KAFKA_SASL_MECHANISM.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
	// SASLAWSMSKIAM is Amazon MSK's IAM access control: each connection presents a request signed
	// with the pod's AWS credentials (the SDK's chain: IAM roles for service accounts, Pod Identity,
	// instance credentials), no username or password.
	SASLAWSMSKIAM = "AWS_MSK_IAM"
)

// Security is how a deployable authenticates to the brokers and protects the connection, as the
// environment gives it: file paths (a Secret mounted into the pod) and credentials (a Secret's keys
// as variables). The zero value is plaintext without authentication, what the embedded broker
// speaks by default.
type Security struct {
	// TLS turns TLS on (TIDEMARK_KAFKA_TLS); giving any of the TLS files turns it on too.
	TLS bool
	// CAFile is a PEM bundle of the certificates that sign the brokers' (TIDEMARK_KAFKA_TLS_CA_FILE);
	// empty: the system's roots.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key in PEM, for brokers that authenticate
	// clients by certificate (TIDEMARK_KAFKA_TLS_CERT_FILE, TIDEMARK_KAFKA_TLS_KEY_FILE): both or
	// neither.
	CertFile, KeyFile string
	// ServerName is the name the brokers' certificates must carry, where it differs from the host
	// dialled (TIDEMARK_KAFKA_TLS_SERVER_NAME).
	ServerName string
	// Mechanism is the SASL mechanism, empty for none (TIDEMARK_KAFKA_SASL_MECHANISM): PLAIN,
	// SCRAM-SHA-256 or SCRAM-SHA-512, with Username and Password (TIDEMARK_KAFKA_SASL_USERNAME,
	// TIDEMARK_KAFKA_SASL_PASSWORD).
	Mechanism          string
	Username, Password string
	// AWSRegion is the MSK cluster's region, for AWS_MSK_IAM (TIDEMARK_KAFKA_AWS_REGION); empty:
	// the AWS SDK's (AWS_REGION).
	AWSRegion string
}

// RegisterEnv reads the TIDEMARK_KAFKA_TLS* and TIDEMARK_KAFKA_SASL_* variables.
func (s *Security) RegisterEnv(e *app.Env) {
	s.TLS = e.Bool("KAFKA_TLS", false)
	s.CAFile = e.String("KAFKA_TLS_CA_FILE", "")
	s.CertFile = e.String("KAFKA_TLS_CERT_FILE", "")
	s.KeyFile = e.String("KAFKA_TLS_KEY_FILE", "")
	s.ServerName = e.String("KAFKA_TLS_SERVER_NAME", "")
	s.Mechanism = e.String("KAFKA_SASL_MECHANISM", "")
	s.Username = e.String("KAFKA_SASL_USERNAME", "")
	s.Password = e.String("KAFKA_SASL_PASSWORD", "")
	s.AWSRegion = e.String("KAFKA_AWS_REGION", "")
}

// Validate reports every setting that cannot work, naming its variable, without reading any file.
func (s Security) Validate() error {
	var errs []error
	if (s.CertFile == "") != (s.KeyFile == "") {
		errs = append(errs, errors.New(app.EnvPrefix+"KAFKA_TLS_CERT_FILE and "+app.EnvPrefix+"KAFKA_TLS_KEY_FILE go together: set both or neither"))
	}
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" {
			errs = append(errs, errors.New(app.EnvPrefix+"KAFKA_SASL_USERNAME is set but "+app.EnvPrefix+"KAFKA_SASL_MECHANISM is not"))
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.Username == "" || s.Password == "" {
			errs = append(errs, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s needs %sKAFKA_SASL_USERNAME and %sKAFKA_SASL_PASSWORD",
				app.EnvPrefix, s.Mechanism, app.EnvPrefix, app.EnvPrefix))
		}
	case SASLAWSMSKIAM:
		if s.Username != "" || s.Password != "" {
			errs = append(errs, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s signs with the pod's AWS credentials: unset %sKAFKA_SASL_USERNAME and %sKAFKA_SASL_PASSWORD",
				app.EnvPrefix, s.Mechanism, app.EnvPrefix, app.EnvPrefix))
		}
		if !s.tlsOn() {
			// MSK's IAM listener speaks TLS only; without it the signed request would go in clear.
			errs = append(errs, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s needs %sKAFKA_TLS", app.EnvPrefix, s.Mechanism, app.EnvPrefix))
		}
	default:
		errs = append(errs, unknownMechanism(s.Mechanism))
	}
	if s.AWSRegion != "" && s.Mechanism != SASLAWSMSKIAM {
		errs = append(errs, fmt.Errorf("%sKAFKA_AWS_REGION is for %sKAFKA_SASL_MECHANISM %s only", app.EnvPrefix, app.EnvPrefix, SASLAWSMSKIAM))
	}
	return errors.Join(errs...)
}

// tlsOn reports whether the connection is TLS.
func (s Security) tlsOn() bool {
	return s.TLS || s.CAFile != "" || s.CertFile != "" || s.ServerName != ""
}

// TLSConfig is the client TLS configuration, nil when TLS is off. It reads the files now: a file
// missing or not PEM is an error naming its variable, at start-up rather than at the first dial.
func (s Security) TLSConfig() (*tls.Config, error) {
	if !s.tlsOn() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%sKAFKA_TLS_CA_FILE: %w", app.EnvPrefix, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%sKAFKA_TLS_CA_FILE %s holds no PEM certificate", app.EnvPrefix, s.CAFile)
		}
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%sKAFKA_TLS_CERT_FILE and %sKAFKA_TLS_KEY_FILE: %w", app.EnvPrefix, app.EnvPrefix, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// SASL is the SASL mechanism, nil without one.
func (s Security) SASL() (sasl.Mechanism, error) {
	switch s.Mechanism {
	case "":
		return nil, nil
	case SASLPlain:
		return plain.Mechanism{Username: s.Username, Password: s.Password}, nil
	case SASLScramSHA256, SASLScramSHA512:
		algo := scram.SHA256
		if s.Mechanism == SASLScramSHA512 {
			algo = scram.SHA512
		}
		m, err := scram.Mechanism(algo, s.Username, s.Password)
		if err != nil {
			return nil, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s: %w", app.EnvPrefix, s.Mechanism, err)
		}
		return m, nil
	case SASLAWSMSKIAM:
		var opts []func(*awsconfig.LoadOptions) error
		if s.AWSRegion != "" {
			opts = append(opts, awsconfig.WithRegion(s.AWSRegion))
		}
		// Loading reads the environment and the shared files only; credentials are fetched (and
		// renewed) at each connection's signature.
		cfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
		if err != nil {
			return nil, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s: the AWS configuration: %w", app.EnvPrefix, s.Mechanism, err)
		}
		if cfg.Region == "" {
			return nil, fmt.Errorf("%sKAFKA_SASL_MECHANISM %s needs the cluster's region: %sKAFKA_AWS_REGION or AWS_REGION",
				app.EnvPrefix, s.Mechanism, app.EnvPrefix)
		}
		return mskiam.NewMechanism(cfg), nil
	}
	return nil, unknownMechanism(s.Mechanism)
}

func unknownMechanism(m string) error {
	return fmt.Errorf("%sKAFKA_SASL_MECHANISM %q must be one of %s, %s, %s, %s", app.EnvPrefix, m, SASLPlain, SASLScramSHA256,
		SASLScramSHA512, SASLAWSMSKIAM)
}

// Secure returns c connecting as s says: its TLS configuration and SASL mechanism built, the files
// read. Every error names the variable to fix.
func (c Config) Secure(s Security) (Config, error) {
	if err := s.Validate(); err != nil {
		return c, err
	}
	var err error
	if c.TLS, err = s.TLSConfig(); err != nil {
		return c, err
	}
	if c.SASL, err = s.SASL(); err != nil {
		return c, err
	}
	return c, nil
}

// Connect returns c secured as sec says (its files read) once a first contact with the brokers has not
// refused it: a certificate or credentials the brokers refuse stop a deployable's start-up with the
// variables to fix, where its consumers would retry them for ever. Brokers not reachable yet are no
// error; the consumers wait for them.
func (c Config) Connect(ctx context.Context, sec Security) (Config, error) {
	c, err := c.Secure(sec)
	if err != nil {
		return c, fmt.Errorf("configuration: %w", err)
	}
	return c, c.Handshake(ctx)
}

// Handshake connects to the first broker that answers, as c says, and returns the error of a setting
// that cannot work: a certificate the brokers do not accept or that does not verify, a SASL mechanism
// or credentials they refuse. Such an error names the variables to fix, so that a deployable stops at
// start-up instead of retrying for ever. A broker that cannot be reached is no such error (it may be
// starting): Handshake returns nil, and the consumers retry as they always do.
func (c Config) Handshake(ctx context.Context) error {
	d := c.dialer()
	for _, b := range c.Brokers {
		conn, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			// With TLS 1.3 a server checks the client's certificate after the handshake: its refusal
			// comes with the first answer.
			_, err = conn.ApiVersions()
			conn.Close()
		}
		if err == nil {
			return nil
		}
		if hint := settingOf(err); hint != "" {
			return fmt.Errorf("kafka: %s to %s refused: %w (check %s)", c.describe(), b, err, hint)
		}
	}
	return nil
}

// settingOf names the variables behind err when it says a setting is wrong, "" otherwise.
func settingOf(err error) string {
	var (
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		op       *net.OpError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname):
		return app.EnvPrefix + "KAFKA_TLS_CA_FILE and " + app.EnvPrefix + "KAFKA_TLS_SERVER_NAME"
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls's word for an alert the broker sent
		return app.EnvPrefix + "KAFKA_TLS_CERT_FILE and " + app.EnvPrefix + "KAFKA_TLS_KEY_FILE"
	case errors.As(err, &record):
		return app.EnvPrefix + "KAFKA_TLS: the broker does not speak TLS there"
	case errors.Is(err, kafkago.SASLAuthenticationFailed), errors.Is(err, kafkago.UnsupportedSASLMechanism),
		errors.Is(err, kafkago.IllegalSASLState):
		return app.EnvPrefix + "KAFKA_SASL_MECHANISM, " + app.EnvPrefix + "KAFKA_SASL_USERNAME and " + app.EnvPrefix + "KAFKA_SASL_PASSWORD"
	}
	return ""
}

// describe names how c connects, for the errors of a first contact that fails.
func (c Config) describe() string {
	var parts []string
	if c.TLS != nil {
		parts = append(parts, "TLS")
	}
	if c.SASL != nil {
		parts = append(parts, "SASL "+c.SASL.Name())
	}
	if len(parts) == 0 {
		return "plaintext"
	}
	return strings.Join(parts, ", ")
}
