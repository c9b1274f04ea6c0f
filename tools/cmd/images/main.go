// Command images writes the mesh's images, one OCI image layout per deployable, without a Docker
// daemon (make images):
//
//	go run ./tools/cmd/images -out dist/images -version v0.1.0 -revision $(git rev-parse HEAD)
//
// Push one with any OCI tool, e.g. crane push dist/images/market <registry>/tidemark/market:v0.1.0.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/tidemark/tidemark/tools/deploy"
	"github.com/tidemark/tidemark/tools/images"
)

func main() {
	out := flag.String("out", "dist/images", "folder the layouts are written under, one per deployable")
	version := flag.String("version", "devel", "version stamped into the binaries and labels")
	revision := flag.String("revision", "unknown", "commit stamped into the binaries and labels")
	platforms := flag.String("platforms", "", "comma list of linux/<arch>; default this machine's")
	only := flag.String("only", "", "comma list of deployables; default all")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *version, *revision, *platforms, *only); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, version, revision, platforms, only string) error {
	root, err := deploy.Root()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(out) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		out = filepath.Join(wd, out)
	}
	var targets []images.Target
	for _, d := range deploy.Deployables() {
		if only == "" || slices.Contains(strings.Split(only, ","), d.Name) {
			targets = append(targets, images.Target{Name: d.Name, Main: d.Main, Summary: d.Summary})
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("no deployable named in %q", only)
	}
	o := images.Options{Root: root, Out: out, Version: version, Revision: revision}
	if platforms != "" {
		o.Platforms = strings.Split(platforms, ",")
	}
	built, err := images.Build(ctx, o, targets)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "IMAGE\tPLATFORM\tSIZE\tLAYOUT")
	for _, img := range built {
		var ps []string
		for p := range img.Size {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for _, p := range ps {
			rel, _ := filepath.Rel(root, img.Dir)
			fmt.Fprintf(w, "%s\t%s\t%.1f MiB\t%s\n", img.Ref, p, float64(img.Size[p])/(1<<20), rel)
		}
	}
	return w.Flush()
}
