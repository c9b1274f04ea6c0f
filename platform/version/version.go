// Package version is what a deployable says it is: the release and the commit it was built from,
// stamped by -ldflags when its image is built, and the -version argument every main answers.
//
//	go build -ldflags "-X github.com/tidemark/tidemark/platform/version.version=v1.2.0 \
//	    -X github.com/tidemark/tidemark/platform/version.revision=$(git rev-parse HEAD)" ./services/market/cmd/market
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Set by -ldflags -X at build time; empty in a plain go build or go run.
var (
	version  string
	revision string
)

// Info identifies a build.
type Info struct {
	Version   string // the release, "devel" when not stamped
	Revision  string // the commit, "unknown" when neither stamped nor recorded by the toolchain
	GoVersion string
}

// Get is this binary's Info: the stamped values, else what the Go toolchain recorded (the module's
// version, the VCS revision when built with -buildvcs).
func Get() Info {
	return resolve(version, revision, func() (*debug.BuildInfo, bool) { return debug.ReadBuildInfo() })
}

func resolve(v, rev string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: v, Revision: rev, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Revision == "" {
				info.Revision = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}

// String is the line -version prints after the deployable's name.
func (i Info) String() string {
	return fmt.Sprintf("%s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// Requested reports whether args (a main's arguments, without the program name) ask for the version:
// exactly one argument, -version or --version.
func Requested(args []string) bool {
	return len(args) == 1 && (args[0] == "-version" || args[0] == "--version")
}

// Handle prints "name version (revision ..., go...)" to w and reports true when args ask for the
// version; a main returns at once when it does, before reading any configuration.
func Handle(name string, args []string, w io.Writer) bool {
	if !Requested(args) {
		return false
	}
	fmt.Fprintf(w, "%s %s\n", name, Get())
	return true
}
