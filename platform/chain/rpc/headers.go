package rpc

import (
	"fmt"
	"strings"
)

// ParseHeaders reads headers given as "Name: value" pairs, the form the services' variables take
// them in (providers put API keys in a header as often as in the URL). An error names the pair
// that is wrong but never shows a value, which is usually a key.
func ParseHeaders(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("%s is no \"Name: value\" pair", redact(p))
		}
		out[name] = strings.TrimSpace(value)
	}
	return out, nil
}

// redact keeps a header's name and hides its value; a pair without a colon has no name to tell
// from its value, so only its length is told.
func redact(pair string) string {
	name, _, ok := strings.Cut(pair, ":")
	if !ok {
		return fmt.Sprintf("(%d characters)", len(pair))
	}
	return name + ": ..."
}
