package httpapi

import (
	"net/http"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/tidemark/tidemark/platform/fault"
)

// maxSegmentLen bounds a path variable (the longest legitimate one, a public key, has 44 bytes) and
// maxValueLen a query value (the longest legitimate one, a page token, is far below it).
const (
	maxSegmentLen = 256
	maxValueLen   = 8192
)

// checkInput refuses path variables and query values that are no identifier or number of any route:
// invalid UTF-8, control characters (NUL among them) and overlong values. Postgres refuses the first
// two in text parameters, which would otherwise surface as server errors; no handler needs to see them.
func checkInput(r *http.Request) error {
	for name, v := range mux.Vars(r) {
		if !printable(v, maxSegmentLen) {
			return fault.Errorf(fault.Invalid, "path segment %s must be printable UTF-8 of at most %d bytes", name, maxSegmentLen)
		}
	}
	if r.URL.RawQuery == "" {
		return nil
	}
	for name, vs := range r.URL.Query() {
		if !printable(name, maxSegmentLen) {
			return fault.Errorf(fault.Invalid, "query parameter names must be printable UTF-8 of at most %d bytes", maxSegmentLen)
		}
		for _, v := range vs {
			if !printable(v, maxValueLen) {
				return fault.Errorf(fault.Invalid, "query parameter %s must be printable UTF-8 of at most %d bytes", name, maxValueLen)
			}
		}
	}
	return nil
}

// printable reports whether s is valid UTF-8 of at most max bytes without control characters.
func printable(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || (r >= 0x80 && r < 0xa0) {
			return false
		}
		i += size
	}
	return true
}
