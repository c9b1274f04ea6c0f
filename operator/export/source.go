package export

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidemark/tidemark/operator/api/v1alpha1"
	"github.com/tidemark/tidemark/platform/exportstream"
	"github.com/tidemark/tidemark/platform/httpapi"
)

// ErrPermanent marks failures that a retry cannot fix (the service rejected the request, or no
// service serves the file type); the job fails at once instead of backing off.
var ErrPermanent = errors.New("permanent")

// Source opens the CSV stream of an export: a header row, then one row per record.
type Source interface {
	// Open starts the stream. The returned Stream's Body reports an error rather than io.EOF when
	// the stream ended early.
	Open(ctx context.Context, spec v1alpha1.ExportJobSpec) (*Stream, error)
}

// Stream is an open export stream.
type Stream struct {
	Body io.ReadCloser
	// Declared returns the record count the service declared, once Body has returned io.EOF;
	// ok is false when it declared none.
	Declared func() (n int64, ok bool)
}

// HTTPSource reads exports from the internal endpoint of the service that owns each file type:
// GET {endpoint}/internal/exports/{fileType}?accounts=a,b&from=..&to=..&market=..
type HTTPSource struct {
	// Endpoints maps a file type to the base URL of its service's internal port.
	Endpoints map[v1alpha1.FileType]string
	Client    *http.Client
}

// ParseEndpoints reads "fileType=url,fileType=url" (the operator's TIDEMARK_EXPORT_SOURCES).
func ParseEndpoints(s string) (map[v1alpha1.FileType]string, error) {
	out := map[v1alpha1.FileType]string{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, base, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("export source %q: want fileType=url", part)
		}
		ft := v1alpha1.FileType(strings.TrimSpace(typ))
		if !knownFileType(ft) {
			return nil, fmt.Errorf("export source %q: unknown file type %q", part, ft)
		}
		u, err := url.Parse(strings.TrimSpace(base))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("export source %q: want an http(s) URL", part)
		}
		out[ft] = strings.TrimSuffix(u.String(), "/")
	}
	return out, nil
}

func knownFileType(ft v1alpha1.FileType) bool {
	for _, t := range v1alpha1.FileTypes {
		if t == ft {
			return true
		}
	}
	return false
}

// Open implements Source.
func (s HTTPSource) Open(ctx context.Context, spec v1alpha1.ExportJobSpec) (*Stream, error) {
	base, ok := s.Endpoints[spec.FileType]
	if !ok {
		return nil, fmt.Errorf("no service is configured for file type %s: %w", spec.FileType, ErrPermanent)
	}
	q := url.Values{}
	accounts := make([]string, len(spec.UserPublicKeys))
	for i, k := range spec.UserPublicKeys {
		accounts[i] = string(k)
	}
	q.Set("accounts", strings.Join(accounts, ","))
	q.Set("from", strconv.FormatInt(spec.From, 10))
	q.Set("to", strconv.FormatInt(spec.To, 10))
	if spec.Market != nil {
		q.Set("market", *spec.Market)
	}
	u := base + exportstream.PathPrefix + url.PathEscape(string(spec.FileType)) + "?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build export request: %w", err)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("request %s export: %w", spec.FileType, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		msg := serviceMessage(resp.Body)
		err := fmt.Errorf("%s export answered %d: %s", spec.FileType, resp.StatusCode, msg)
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests &&
			resp.StatusCode != http.StatusRequestTimeout {
			return nil, fmt.Errorf("%w: %w", err, ErrPermanent)
		}
		return nil, err
	}
	return &Stream{
		Body: resp.Body,
		Declared: func() (int64, bool) {
			v := resp.Trailer.Get(exportstream.RecordCountTrailer)
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil && n >= 0
		},
	}, nil
}

// serviceMessage is the message of a {success:false,message} answer, or the start of the body.
func serviceMessage(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	if msg, ok := httpapi.ErrorMessage(b); ok {
		return msg
	}
	return strings.TrimSpace(string(b))
}
