package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"
)

// WebIdentity is a role assumed with an OpenID Connect token through the STS's
// AssumeRoleWithWebIdentity: EKS's IAM roles for service accounts, or any STS that trusts the
// cluster's service account issuer (MinIO's does). The token is a projected service account token,
// read again at every renewal because the kubelet rotates it.
type WebIdentity struct {
	// TokenFile holds the token (AWS_WEB_IDENTITY_TOKEN_FILE). Empty means no web identity.
	TokenFile string
	// RoleARN is the role assumed (AWS_ROLE_ARN).
	RoleARN string
	// STSEndpoint is the STS's URL (TIDEMARK_S3_STS_ENDPOINT, else AWS_ENDPOINT_URL_STS); empty
	// means AWS's endpoint in the bucket's region.
	STSEndpoint string
	// Duration is how long each session lasts (TIDEMARK_S3_SESSION_DURATION); zero leaves it to the
	// STS (AWS: one hour). A presigned URL ends with the session that signed it, so it must cover
	// the download URLs' lifetime for them to last as long as promised.
	Duration time.Duration
}

// The bounds AWS puts on a role session's duration.
const (
	minSessionDuration = 15 * time.Minute
	maxSessionDuration = 12 * time.Hour
)

func (w WebIdentity) validate() error {
	if w.TokenFile == "" {
		return nil
	}
	switch {
	case w.RoleARN == "":
		return errors.New("objstore: AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is empty: the web identity needs a role to assume")
	case w.Duration != 0 && (w.Duration < minSessionDuration || w.Duration > maxSessionDuration):
		return fmt.Errorf("objstore: S3 session duration %v outside [%v, %v]", w.Duration, minSessionDuration, maxSessionDuration)
	}
	if w.STSEndpoint != "" {
		if u, err := url.Parse(w.STSEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("objstore: S3 STS endpoint %q: want an http(s) URL", w.STSEndpoint)
		}
	}
	return nil
}

// stsEndpoint is AWS's STS endpoint of region, as the SDKs choose it.
func (w WebIdentity) stsEndpoint(region string) string {
	switch {
	case w.STSEndpoint != "":
		return w.STSEndpoint
	case strings.HasPrefix(region, "cn-"):
		return "https://sts." + region + ".amazonaws.com.cn"
	default:
		return "https://sts." + region + ".amazonaws.com"
	}
}

// storeCredentials are where a store's keys come from and which source gave them.
type storeCredentials struct {
	creds *credentials.Credentials
	// Source says where the keys come from, for errors and logs.
	Source string

	mu        sync.Mutex
	renewedAt time.Time // when a URL last forced a new session
}

// newCredentials picks the first source the config gives, in the order of the cloud SDKs' default
// chain: static keys, a web identity, then the environment's keys (AWS_ACCESS_KEY_ID), container
// credentials (ECS, EKS Pod Identity: AWS_CONTAINER_CREDENTIALS_*) and the instance's metadata
// service, the last three as minio-go's providers read them.
func newCredentials(c S3Config) *storeCredentials {
	switch {
	case c.AccessKey != "":
		return &storeCredentials{creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""), Source: "static keys (TIDEMARK_S3_ACCESS_KEY)"}
	case c.WebIdentity.TokenFile != "":
		w := c.WebIdentity
		endpoint := w.stsEndpoint(c.Region)
		seconds := int(w.Duration / time.Second)
		p := &credentials.STSWebIdentity{
			STSEndpoint: endpoint,
			RoleARN:     w.RoleARN,
			GetWebIDTokenExpiry: func() (*credentials.WebIdentityToken, error) {
				token, err := os.ReadFile(w.TokenFile)
				if err != nil {
					return nil, err
				}
				// Expiry is what the STS receives as the session's DurationSeconds.
				return &credentials.WebIdentityToken{Token: strings.TrimSpace(string(token)), Expiry: seconds}, nil
			},
		}
		return &storeCredentials{creds: credentials.New(p), Source: fmt.Sprintf(
			"web identity (AWS_WEB_IDENTITY_TOKEN_FILE %s, AWS_ROLE_ARN %s, STS %s)", w.TokenFile, w.RoleARN, endpoint)}
	default:
		return &storeCredentials{
			creds: credentials.NewChainCredentials([]credentials.Provider{&credentials.EnvAWS{}, &credentials.IAM{}}),
			Source: "the credential chain (no TIDEMARK_S3_ACCESS_KEY or AWS_WEB_IDENTITY_TOKEN_FILE: " +
				"AWS_ACCESS_KEY_ID, container credentials, instance metadata)",
		}
	}
}

// check fetches the credentials once, so that a wrong role or token fails start-up with a message
// naming the source rather than the first export.
func (c *storeCredentials) check(ctx context.Context) error {
	v, err := c.creds.GetWithContext(&credentials.CredContext{Context: ctx})
	if err == nil && v.AccessKeyID == "" {
		err = errors.New("no credentials found")
	}
	if err != nil {
		return fmt.Errorf("objstore: S3 credentials from %s: %w", c.Source, err)
	}
	return nil
}

// renewBefore is how soon a URL may force another session: a URL asked to outlive the session
// renews it, but a session too short for every URL must not renew on every read.
const renewBefore = time.Minute

// lifetime is d, or less when the credentials are a session that ends sooner: S3 refuses a
// presigned URL once its session ends, so the URL says so rather than promising longer. A session
// that ends before d is renewed first, at most once a minute.
func (c *storeCredentials) lifetime(ctx context.Context, now time.Time, d time.Duration) (time.Duration, error) {
	cc := &credentials.CredContext{Context: ctx}
	v, err := c.creds.GetWithContext(cc)
	if err != nil {
		return 0, fmt.Errorf("objstore: S3 credentials from %s: %w", c.Source, err)
	}
	if v.Expiration.IsZero() || !v.Expiration.Before(now.Add(d)) {
		return d, nil
	}
	c.mu.Lock()
	renew := now.Sub(c.renewedAt) >= renewBefore
	if renew {
		c.renewedAt = now
	}
	c.mu.Unlock()
	if renew {
		c.creds.Expire()
		if v, err = c.creds.GetWithContext(cc); err != nil {
			return 0, fmt.Errorf("objstore: S3 credentials from %s: %w", c.Source, err)
		}
	}
	if left := v.Expiration.Sub(now).Truncate(time.Second); left < d {
		return left, nil
	}
	return d, nil
}
