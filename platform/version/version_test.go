package version

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	recorded := func(mainVersion, rev string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			bi := &debug.BuildInfo{Main: debug.Module{Version: mainVersion}}
			if rev != "" {
				bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev})
			}
			return bi, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	tests := []struct {
		name          string
		v, rev        string
		read          func() (*debug.BuildInfo, bool)
		wantV, wantRV string
	}{
		{"stamped wins", "v1.2.0", "abc", recorded("v0.9.0", "def"), "v1.2.0", "abc"},
		{"recorded when not stamped", "", "", recorded("v0.9.0", "def"), "v0.9.0", "def"},
		{"devel module", "", "", recorded("(devel)", ""), "devel", "unknown"},
		{"no build info", "", "", none, "devel", "unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.v, tc.rev, tc.read)
			if got.Version != tc.wantV || got.Revision != tc.wantRV || got.GoVersion == "" {
				t.Errorf("resolve = %+v, want version %s revision %s", got, tc.wantV, tc.wantRV)
			}
		})
	}
}

func TestHandle(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"-version"}, true},
		{[]string{"--version"}, true},
		{nil, false},
		{[]string{"-version", "x"}, false},
		{[]string{"-v"}, false},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		if got := Handle("market", tc.args, &out); got != tc.want {
			t.Errorf("Handle(%q) = %v, want %v", tc.args, got, tc.want)
		}
		if tc.want && !strings.HasPrefix(out.String(), "market devel (revision ") {
			t.Errorf("Handle(%q) printed %q", tc.args, out.String())
		}
		if !tc.want && out.Len() > 0 {
			t.Errorf("Handle(%q) printed %q without being asked", tc.args, out.String())
		}
	}
}
