package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
)

var (
	publicKeyPattern = regexp.MustCompile(`^[1-9A-HJ-NP-Za-km-z]{32,44}$`)
	marketPattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)
)

// Validate applies the rules the CRD schema and its CEL rules enforce on create, so that callers
// without an API server (the local runner, the export API's 400 answers) refuse the same specs.
// It returns every problem found.
func (s ExportJobSpec) Validate() error {
	var errs []error
	if !publicKeyPattern.MatchString(string(s.Authority)) {
		errs = append(errs, fmt.Errorf("authority %q is not a base58 public key", s.Authority))
	}
	known := false
	for _, t := range FileTypes {
		known = known || t == s.FileType
	}
	if !known {
		errs = append(errs, fmt.Errorf("fileType %q is not one of %v", s.FileType, FileTypes))
	}
	if s.From < 0 || s.To < 0 {
		errs = append(errs, errors.New("from and to must be >= 0"))
	}
	if s.From > s.To {
		errs = append(errs, errors.New("from must not be after to"))
	} else if s.To-s.From > MaxRangeSeconds {
		errs = append(errs, errors.New("the range from..to may span at most 366 days"))
	}
	switch n := len(s.UserPublicKeys); {
	case n == 0:
		errs = append(errs, errors.New("userPublicKeys needs at least 1 item"))
	case n > 100:
		errs = append(errs, errors.New("userPublicKeys takes at most 100 items"))
	}
	seen := make(map[PublicKey]bool, len(s.UserPublicKeys))
	for _, k := range s.UserPublicKeys {
		if !publicKeyPattern.MatchString(string(k)) {
			errs = append(errs, fmt.Errorf("userPublicKeys: %q is not a base58 public key", k))
		}
		if seen[k] {
			errs = append(errs, fmt.Errorf("userPublicKeys: %q appears twice", k))
		}
		seen[k] = true
	}
	if s.Market != nil && !marketPattern.MatchString(*s.Market) {
		errs = append(errs, fmt.Errorf("market %q is not a market symbol", *s.Market))
	}
	if s.BackoffLimit != nil && (*s.BackoffLimit < 0 || *s.BackoffLimit > 10) {
		errs = append(errs, errors.New("backoffLimit must be within 0..10"))
	}
	if s.ActiveDeadlineSeconds != nil && (*s.ActiveDeadlineSeconds < 1 || *s.ActiveDeadlineSeconds > 86400) {
		errs = append(errs, errors.New("activeDeadlineSeconds must be within 1..86400"))
	}
	if s.TTLSecondsAfterFinished != nil && *s.TTLSecondsAfterFinished < 0 {
		errs = append(errs, errors.New("ttlSecondsAfterFinished must be >= 0"))
	}
	return errors.Join(errs...)
}

// Default fills the optional fields the CRD schema defaults.
func (s *ExportJobSpec) Default() {
	if s.BackoffLimit == nil {
		v := int32(3)
		s.BackoffLimit = &v
	}
	if s.ActiveDeadlineSeconds == nil {
		v := int64(3600)
		s.ActiveDeadlineSeconds = &v
	}
	if s.TTLSecondsAfterFinished == nil {
		v := int32(604800)
		s.TTLSecondsAfterFinished = &v
	}
}
