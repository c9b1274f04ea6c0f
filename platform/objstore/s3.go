package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/tidemark/tidemark/platform/app"
)

// Part sizes of the S3 store's multipart uploads.
const (
	DefaultPartSize = 16 << 20
	// MinPartSize is S3's minimum for every part but the last.
	MinPartSize = 5 << 20
	// MaxPartSize is S3's maximum part size.
	MaxPartSize = 5 << 30
	// defaultRegion is what MinIO answers unless configured otherwise. Setting a region also spares
	// the client a bucket-location request before the first operation, presigning included.
	defaultRegion = "us-east-1"
	// uploadBuffers is how many parts a Put holds in memory (see Put).
	uploadBuffers = 2
	// smallPut bounds the bodies Put sends in a single request (exclusive).
	smallPut = 1 << 20
)

// S3Config configures the S3 store.
type S3Config struct {
	// Endpoint is the service's host:port, without scheme.
	Endpoint string
	// Bucket holds the objects.
	Bucket string
	// Region is the bucket's region; empty means us-east-1.
	Region string
	// AccessKey and SecretKey are static credentials. Both empty means the credential chain of
	// the cloud's SDKs instead: WebIdentity when it has a token file, else the environment, the
	// container's or the instance's credentials (see newCredentials).
	AccessKey, SecretKey string
	// WebIdentity is a role assumed with the pod's service account token.
	WebIdentity WebIdentity
	// UseTLS selects https for Endpoint.
	UseTLS bool
	// PartSize is the size of each uploaded part; each Put holds two parts in memory. Zero means
	// DefaultPartSize; otherwise it must lie in [MinPartSize, MaxPartSize]. An object can have at
	// most 10,000 parts, so PartSize caps the object size (16 MiB parts: 156 GiB).
	PartSize int64
	// PublicURL is the scheme and host that download URLs point at, e.g. "https://files.example.com",
	// for when clients cannot reach Endpoint (a cluster-internal service). Empty means Endpoint.
	// It must reach the same service: the host is part of the signature.
	PublicURL string
	// CreateBucket creates the bucket when it is missing (for dev stacks and tests); otherwise a
	// missing bucket fails NewS3.
	CreateBucket bool
}

// RegisterEnv reads the config from TIDEMARK_S3_ENDPOINT, _BUCKET, _REGION, _ACCESS_KEY,
// _SECRET_KEY, _TLS, _PART_SIZE (bytes), _PUBLIC_URL, _STS_ENDPOINT and _SESSION_DURATION (with
// e's prefix), and the web identity from the variables the cloud's SDKs read, which EKS's pod
// identity webhook sets: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, and AWS_ENDPOINT_URL_STS
// when _STS_ENDPOINT is empty. (Sessions are named by minio-go, one name per renewal:
// AWS_ROLE_SESSION_NAME is not read.) CreateBucket stays as it is. The result is
// not validated: NewS3 does that.
func (c *S3Config) RegisterEnv(e *app.Env) {
	c.Endpoint = e.String("S3_ENDPOINT", c.Endpoint)
	c.Bucket = e.String("S3_BUCKET", c.Bucket)
	c.Region = e.String("S3_REGION", c.Region)
	c.AccessKey = e.String("S3_ACCESS_KEY", c.AccessKey)
	c.SecretKey = e.String("S3_SECRET_KEY", c.SecretKey)
	c.UseTLS = e.Bool("S3_TLS", c.UseTLS)
	c.PartSize = int64(e.Int("S3_PART_SIZE", int(c.PartSize)))
	c.PublicURL = e.String("S3_PUBLIC_URL", c.PublicURL)
	c.WebIdentity.STSEndpoint = e.String("S3_STS_ENDPOINT", c.WebIdentity.STSEndpoint)
	c.WebIdentity.Duration = e.Duration("S3_SESSION_DURATION", c.WebIdentity.Duration)
	// The SDKs' own names, unprefixed: whatever injects them (a webhook, the chart) needs no
	// translation, and they are not listed among the deployable's variables.
	aws := &app.Env{Lookup: e.Lookup}
	c.WebIdentity.TokenFile = aws.String("AWS_WEB_IDENTITY_TOKEN_FILE", c.WebIdentity.TokenFile)
	c.WebIdentity.RoleARN = aws.String("AWS_ROLE_ARN", c.WebIdentity.RoleARN)
	if c.WebIdentity.STSEndpoint == "" {
		c.WebIdentity.STSEndpoint = aws.String("AWS_ENDPOINT_URL_STS", "")
	}
}

// Validate reports the first problem with the config.
func (c S3Config) Validate() error {
	switch {
	case c.Endpoint == "":
		return errors.New("objstore: S3 endpoint is empty")
	case strings.Contains(c.Endpoint, "/"):
		return fmt.Errorf("objstore: S3 endpoint %q: want host:port without scheme or path (set UseTLS for https)", c.Endpoint)
	case (c.AccessKey == "") != (c.SecretKey == ""):
		return errors.New("objstore: S3 access key or secret key is empty: give both, or neither for the credential chain")
	case c.PartSize != 0 && (c.PartSize < MinPartSize || c.PartSize > MaxPartSize):
		return fmt.Errorf("objstore: S3 part size %d outside [%d, %d]", c.PartSize, MinPartSize, MaxPartSize)
	}
	if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		return fmt.Errorf("objstore: S3 bucket %q: %w", c.Bucket, err)
	}
	if c.PublicURL != "" {
		if _, _, err := parsePublicURL(c.PublicURL); err != nil {
			return err
		}
	}
	return c.WebIdentity.validate()
}

func parsePublicURL(s string) (host string, secure bool, err error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", false, fmt.Errorf("objstore: S3 public URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", false, fmt.Errorf("objstore: S3 public URL %q: want http(s)://host[:port]", s)
	}
	return u.Host, u.Scheme == "https", nil
}

// S3 is a Store on an S3-compatible service.
type S3 struct {
	client   *minio.Client
	presign  *minio.Client // client itself unless PublicURL is set
	creds    *storeCredentials
	bucket   string
	partSize uint64
}

var _ Store = (*S3)(nil)

// credentialsCheck bounds the first fetch of the credentials: an instance metadata service that is
// not there would otherwise hold start-up for the kernel's connect timeout.
const credentialsCheck = 30 * time.Second

// NewS3 connects to the service, fetches the credentials and checks that the bucket exists
// (creating it when cfg.CreateBucket is set). A credential that does not work fails here, naming
// where it came from.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	if cfg.PartSize == 0 {
		cfg.PartSize = DefaultPartSize
	}
	creds := newCredentials(cfg)
	opts := func(secure bool) *minio.Options {
		return &minio.Options{
			Creds:  creds.creds,
			Secure: secure,
			Region: cfg.Region,
			// Lets the client declare CRC32C checksums on the multipart upload (see Put).
			TrailingHeaders: true,
		}
	}
	client, err := minio.New(cfg.Endpoint, opts(cfg.UseTLS))
	if err != nil {
		return nil, fmt.Errorf("objstore: S3 client for %s: %w", cfg.Endpoint, err)
	}
	s := &S3{client: client, presign: client, creds: creds, bucket: cfg.Bucket, partSize: uint64(cfg.PartSize)}
	if cfg.PublicURL != "" {
		host, secure, _ := parsePublicURL(cfg.PublicURL)
		// Presigning is offline when the region is known: this client never sends a request.
		if s.presign, err = minio.New(host, opts(secure)); err != nil {
			return nil, fmt.Errorf("objstore: S3 client for %s: %w", cfg.PublicURL, err)
		}
	}
	checkCtx, cancel := context.WithTimeout(ctx, credentialsCheck)
	err = creds.check(checkCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	if err := s.ensureBucket(ctx, cfg.CreateBucket, cfg.Region); err != nil {
		return nil, fmt.Errorf("%w (credentials from %s)", err, creds.Source)
	}
	return s, nil
}

func (s *S3) ensureBucket(ctx context.Context, create bool, region string) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("objstore: check bucket %s: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	if !create {
		return fmt.Errorf("objstore: bucket %s does not exist", s.bucket)
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if minio.ToErrorResponse(err).Code == "BucketAlreadyOwnedByYou" {
		// Another process of ours created it between the check and the request.
		return nil
	}
	if err != nil {
		return fmt.Errorf("objstore: create bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Put implements Store. A body under 1 MiB goes up in one request; a larger one in a multipart
// upload of PartSize parts, two of them in memory at a time. A failure aborts the multipart upload
// so that no parts linger.
func (s *S3) Put(ctx context.Context, key string, r io.Reader, o PutOptions) (int64, error) {
	if err := validatePut(key, o); err != nil {
		return 0, err
	}
	opts := minio.PutObjectOptions{
		// minio-go adds its own entries to this map.
		UserMetadata:       maps.Clone(o.Metadata),
		ContentType:        o.ContentType,
		ContentDisposition: o.ContentDisposition,
		// Without it an unknown size gets parts of 5 TiB / 10,000 = 512 MiB, each held in memory.
		PartSize: s.partSize,
		// Over plain http minio-go would otherwise sign every 64 KiB chunk with SHA-256 (over https
		// it sends UNSIGNED-PAYLOAD anyway); TLS or the CRC32C below already protect the bytes, so
		// a SHA-256 pass over every byte would add nothing but work.
		DisableContentSha256: true,
		// A CRC32C per part, checked by the server, is a hardware instruction; an MD5 per part
		// would be a second software pass over every byte.
		AutoChecksum:   minio.ChecksumCRC32C,
		SendContentMd5: false,
		// Two part buffers: one fills from the reader while the other uploads. Sequential parts
		// leave the reader idle during each upload, and a CSV-encoding reader is then the limit.
		// Two are all the overlap needs; more would only hold more parts in memory.
		ConcurrentStreamParts: true,
		NumThreads:            uploadBuffers,
	}
	// Small exports are common: spare them the three requests of a multipart upload and its
	// 2*PartSize of buffers.
	body := io.Reader(ctxReader{ctx, r})
	head := make([]byte, smallPut)
	n, err := io.ReadFull(body, head)
	size := int64(-1)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		body, size = bytes.NewReader(head[:n]), int64(n)
	case err != nil:
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	default:
		body = io.MultiReader(bytes.NewReader(head), body)
	}
	info, err := s.client.PutObject(ctx, s.bucket, key, body, size, opts)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		return 0, fmt.Errorf("objstore: put %s: %w", key, err)
	}
	return info.Size, nil
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
			return Info{}, fmt.Errorf("objstore: stat %s: %w", key, ErrNotFound)
		}
		return Info{}, fmt.Errorf("objstore: stat %s: %w", key, err)
	}
	md := make(map[string]string, len(oi.UserMetadata))
	for k, v := range oi.UserMetadata {
		// HTTP canonicalises the names ("Records"); we store lower-case ones.
		md[strings.ToLower(k)] = v
	}
	return Info{Key: key, Size: oi.Size, Metadata: md, LastModified: oi.LastModified}, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	// S3 answers a delete of a missing key with success.
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("objstore: delete %s: %w", key, err)
	}
	return nil
}

// URL implements Store with a presigned GET URL. S3 counts the lifetime in whole seconds from the
// signing second, so the URL ends within a second of expires. With temporary credentials (a web
// identity, container or instance credentials) the URL ends no later than the session that signs
// it, which is renewed first when it would end sooner (see WebIdentity.Duration).
func (s *S3) URL(ctx context.Context, key string, expires time.Time) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	now := time.Now()
	if _, err := urlLifetime(now, expires); err != nil {
		return "", err
	}
	// The server ends the URL at its signing second (now, truncated) plus whole seconds. Counting
	// them between the truncated times makes it end at expires' second, not up to 2 s earlier as
	// truncating the duration did (which expired short URLs at once). Should the signature fall in
	// the next second, the URL outlives expires by under a second.
	d, err := s.creds.lifetime(ctx, now, time.Duration(expires.Unix()-now.Unix())*time.Second)
	if err != nil {
		return "", err
	}
	u, err := s.presign.PresignedGetObject(ctx, s.bucket, key, d, nil)
	if err != nil {
		return "", fmt.Errorf("objstore: presign %s: %w", key, err)
	}
	return u.String(), nil
}
