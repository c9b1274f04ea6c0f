package kafka_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/sasl"

	"github.com/tidemark/tidemark/platform/events"
	"github.com/tidemark/tidemark/platform/kafka"
	"github.com/tidemark/tidemark/platform/kafka/kafkatest"
)

// TestSecureBrokers: through TLS (with and without client certificates) and through each SASL
// mechanism, the writer, the admin client, a partition reader and a consumer group all work, as a
// production cluster is reached.
func TestSecureBrokers(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kafkatest.Options
	}{
		{"TLS", kafkatest.Options{}},
		{"mutual TLS", kafkatest.Options{ClientCerts: true}},
		{"TLS and SASL/PLAIN", kafkatest.Options{Mechanism: kafka.SASLPlain, User: "tidemark", Password: "plain-secret"}},
		{"TLS and SASL/SCRAM-SHA-256", kafkatest.Options{Mechanism: kafka.SASLScramSHA256, User: "tidemark", Password: "s256-secret"}},
		{"TLS and SASL/SCRAM-SHA-512", kafkatest.Options{Mechanism: kafka.SASLScramSHA512, User: "tidemark", Password: "s512-secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Topics, tc.opts.Partitions = []string{"secure"}, 2
			b := kafkatest.Start(t, tc.opts)
			kc := b.Config(t, "secure-test", b.Security)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := kc.Handshake(ctx); err != nil {
				t.Fatalf("handshake: %v", err)
			}
			w := kc.NewWriter("")
			defer w.Close()
			if err := (kafka.Producer{W: w}).Write(ctx, events.Message{Topic: "secure", Key: []byte("k"), Value: []byte(`{"n":1}`)}); err != nil {
				t.Fatalf("write: %v", err)
			}
			ends, err := kc.EndOffsets(ctx, "secure")
			if err != nil {
				t.Fatalf("end offsets: %v", err)
			}
			var partition int
			for p, end := range ends["secure"] {
				if end == 1 {
					partition = p
				}
			}
			if ends["secure"][partition] != 1 {
				t.Fatalf("end offsets %v, want one message", ends)
			}
			r := kc.NewPartitionReader("secure", partition, 0)
			defer r.Close()
			m, err := r.FetchMessage(ctx)
			if err != nil || string(m.Value) != `{"n":1}` {
				t.Fatalf("read %q: %v", m.Value, err)
			}
			cg, err := kc.NewConsumerGroup("secure-group", []string{"secure"}, 6*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer cg.Close()
			gen, err := cg.Next(ctx)
			if err != nil {
				t.Fatalf("join the group: %v", err)
			}
			if got := len(gen.Assignments["secure"]); got != 2 {
				t.Errorf("the group's one member got %d partitions, want 2", got)
			}
		})
	}
}

// TestSecureBrokersRefuseWrongSettings: a setting the broker refuses stops the client at its first
// contact with an error naming the variables to fix; a broker that cannot be reached does not.
func TestSecureBrokersRefuseWrongSettings(t *testing.T) {
	sasl := kafkatest.Start(t, kafkatest.Options{Mechanism: kafka.SASLScramSHA512, User: "tidemark", Password: "right"})
	mtls := kafkatest.Start(t, kafkatest.Options{ClientCerts: true})
	other := kafkatest.NewCA(t, t.TempDir(), "another-ca")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	for _, tc := range []struct {
		name   string
		broker *kafkatest.Broker
		change func(*kafka.Security)
		want   string
	}{
		{"a wrong password", sasl, func(s *kafka.Security) { s.Password = "wrong" }, "TIDEMARK_KAFKA_SASL_PASSWORD"},
		{"an unknown user", sasl, func(s *kafka.Security) { s.Username = "nobody" }, "TIDEMARK_KAFKA_SASL_USERNAME"},
		{"another mechanism than the user's", sasl, func(s *kafka.Security) { s.Mechanism = kafka.SASLScramSHA256 }, "TIDEMARK_KAFKA_SASL_MECHANISM"},
		{"an untrusted broker certificate", sasl, func(s *kafka.Security) { s.CAFile = other.File }, "TIDEMARK_KAFKA_TLS_CA_FILE"},
		{"a server name the certificate lacks", sasl, func(s *kafka.Security) { s.ServerName = "kafka.example.com" }, "TIDEMARK_KAFKA_TLS_SERVER_NAME"},
		{"no client certificate", mtls, func(s *kafka.Security) { s.CertFile, s.KeyFile = "", "" }, "TIDEMARK_KAFKA_TLS_CERT_FILE"},
		{"a client certificate of another CA", mtls, func(s *kafka.Security) {
			s.CertFile, s.KeyFile = other.Issue(t, t.TempDir(), "stranger")
		}, "TIDEMARK_KAFKA_TLS_CERT_FILE"},
		// Only Amazon MSK speaks AWS_MSK_IAM: any other cluster refuses the mechanism by name.
		{"MSK IAM against a SCRAM cluster", sasl, func(s *kafka.Security) {
			s.Mechanism, s.Username, s.Password, s.AWSRegion = kafka.SASLAWSMSKIAM, "", "", "eu-west-1"
		}, "TIDEMARK_KAFKA_SASL_MECHANISM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := tc.broker.Security
			tc.change(&sec)
			kc := tc.broker.Config(t, "refused", sec)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := kc.Handshake(ctx)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("handshake: %v, want an error naming %s", err, tc.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
	t.Run("a broker not reachable yet", func(t *testing.T) {
		kc := kafka.Config{Brokers: []string{"127.0.0.1:1"}}
		if err := kc.Handshake(context.Background()); err != nil {
			t.Fatalf("handshake with nothing listening: %v, want nil (the consumers retry)", err)
		}
	})
}

// TestSecurityValidate: settings that cannot work are refused before any file is read, each naming
// its variable.
func TestSecurityValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		sec  kafka.Security
		want string // "" for valid
	}{
		{"plaintext", kafka.Security{}, ""},
		{"SCRAM with credentials", kafka.Security{Mechanism: kafka.SASLScramSHA256, Username: "u", Password: "p"}, ""},
		{"a certificate without its key", kafka.Security{CertFile: "c.pem"}, "TIDEMARK_KAFKA_TLS_KEY_FILE"},
		{"a mechanism without a password", kafka.Security{Mechanism: kafka.SASLPlain, Username: "u"}, "TIDEMARK_KAFKA_SASL_PASSWORD"},
		{"an unknown mechanism", kafka.Security{Mechanism: "GSSAPI", Username: "u", Password: "p"}, "TIDEMARK_KAFKA_SASL_MECHANISM"},
		{"credentials without a mechanism", kafka.Security{Username: "u", Password: "p"}, "TIDEMARK_KAFKA_SASL_MECHANISM"},
		{"MSK IAM over TLS", kafka.Security{Mechanism: kafka.SASLAWSMSKIAM, TLS: true, AWSRegion: "eu-west-1"}, ""},
		{"MSK IAM in clear", kafka.Security{Mechanism: kafka.SASLAWSMSKIAM}, "TIDEMARK_KAFKA_TLS"},
		{"MSK IAM with a password", kafka.Security{Mechanism: kafka.SASLAWSMSKIAM, TLS: true, Username: "u", Password: "p"},
			"TIDEMARK_KAFKA_SASL_USERNAME"},
		{"a region without MSK IAM", kafka.Security{Mechanism: kafka.SASLPlain, Username: "u", Password: "p", AWSRegion: "eu-west-1"},
			"TIDEMARK_KAFKA_AWS_REGION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.sec.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
	_, err := kafka.Config{}.Secure(kafka.Security{CAFile: "/nonexistent/ca.crt"})
	if err == nil || !strings.Contains(err.Error(), "TIDEMARK_KAFKA_TLS_CA_FILE") {
		t.Fatalf("a missing CA file: %v", err)
	}
}

// TestMSKIAMSignature: what AWS_MSK_IAM presents to the broker is the request MSK's IAM access
// control expects (aws-msk-iam-auth's payload), signed with the credentials of the AWS SDK's chain
// (here its environment variables): the test recomputes the SigV4 signature itself, as MSK does.
func TestMSKIAMSignature(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_SESSION_TOKEN", "session-of-the-pod")
	t.Setenv("AWS_REGION", "us-east-1") // TIDEMARK_KAFKA_AWS_REGION wins over it
	mech, err := kafka.Security{Mechanism: kafka.SASLAWSMSKIAM, TLS: true, AWSRegion: "eu-west-1"}.SASL()
	if err != nil {
		t.Fatal(err)
	}
	const host = "b-1.tidemark.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
	_, raw, err := mech.Start(sasl.WithMetadata(context.Background(), &sasl.Metadata{Host: host}))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]string
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("payload %s: %v", raw, err)
	}
	date, err := time.Parse("20060102T150405Z", p["x-amz-date"])
	if err != nil || time.Since(date) > time.Minute {
		t.Fatalf("x-amz-date %q: %v", p["x-amz-date"], err)
	}
	scope := date.Format("20060102") + "/eu-west-1/kafka-cluster/aws4_request"
	for k, want := range map[string]string{
		"version": "2020_10_22", "host": host, "action": "kafka-cluster:Connect", "x-amz-algorithm": "AWS4-HMAC-SHA256",
		"x-amz-credential": "AKIDEXAMPLE/" + scope, "x-amz-security-token": "session-of-the-pod", "x-amz-signedheaders": "host",
	} {
		if p[k] != want {
			t.Errorf("%s = %q, want %q", k, p[k], want)
		}
	}
	// SigV4 of the presigned GET kafka://host/?Action=kafka-cluster:Connect&X-Amz-...: the canonical
	// request (the query sorted and escaped, the host header, the empty payload's hash), the string
	// to sign, and the key derived from the secret, the date, the region and the service.
	q := url.Values{"Action": {p["action"]}}
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-Security-Token", "X-Amz-SignedHeaders"} {
		q.Set(k, p[strings.ToLower(k)])
	}
	query := strings.ReplaceAll(q.Encode(), "+", "%20")
	emptyHash := sha256.Sum256(nil)
	canonical := "GET\n/\n" + query + "\nhost:" + host + "\n\nhost\n" + hex.EncodeToString(emptyHash[:])
	canonicalHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + p["x-amz-date"] + "\n" + scope + "\n" + hex.EncodeToString(canonicalHash[:])
	key := []byte("AWS4" + "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	for _, part := range []string{date.Format("20060102"), "eu-west-1", "kafka-cluster", "aws4_request", toSign} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(part))
		key = m.Sum(nil)
	}
	if got := p["x-amz-signature"]; got != hex.EncodeToString(key) {
		t.Errorf("x-amz-signature %s, want %x (the canonical request:\n%s)", got, key, canonical)
	}
}
