// Package images builds the mesh's container images without a Docker daemon: each deployable's main
// package compiled into a static binary, put on an empty base as the only layer, run as uid 10001,
// labelled with its source, version and revision, and written as an OCI image layout. The
// Dockerfile (deploy writes it, a target per deployable) produces the same entrypoint, user and labels.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is who every image runs as: a uid and gid no base image has a user for, never root.
const User = "10001:10001"

// Source is the repository the images are built from (org.opencontainers.image.source).
const Source = "https://github.com/tidemark/tidemark"

// VersionPackage is where -ldflags -X stamps the version and revision (platform/version).
const VersionPackage = "github.com/tidemark/tidemark/platform/version"

// BinaryPath is where a deployable's binary is in its image: its entrypoint.
func BinaryPath(binary string) string { return "/usr/local/bin/" + binary }

// TitleLabel is the annotation naming the deployable an image runs.
const TitleLabel = "org.opencontainers.image.title"

// Labels are an image's OCI annotations in its config.
func Labels(name, version, revision string) map[string]string {
	return map[string]string{
		TitleLabel:                          "tidemark-" + name,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
	}
}

// LDFlags are the linker flags of a release binary: no symbol tables, the version stamped.
func LDFlags(version, revision string) string {
	return fmt.Sprintf("-s -w -X %[1]s.version=%[2]s -X %[1]s.revision=%[3]s", VersionPackage, version, revision)
}

// Target is one image: Name names it (tidemark/<Name>), Main is its main package relative to the
// repository root.
type Target struct {
	Name string
	Main string
}

// Binary is the target's command name, the last element of its main package.
func (t Target) Binary() string { return path.Base(t.Main) }

// Options say what to build and where.
type Options struct {
	// Root is the repository root (the go.work folder); Out the folder each image's layout is
	// written under (Out/<name>), replaced when it exists.
	Root, Out string
	// Version and Revision are stamped into the binaries and the labels.
	Version, Revision string
	// Platforms are os/arch pairs ("linux/amd64"); more than one gives an image index. Default: linux
	// on this machine's architecture.
	Platforms []string
	// Repository prefixes the names in the layouts' ref annotations (default "tidemark/").
	Repository string
}

// Image is one written image.
type Image struct {
	Name string
	// Ref is its name and tag in the layout (org.opencontainers.image.ref.name).
	Ref string
	// Dir is its OCI image layout.
	Dir string
	// Size is what a registry stores per platform: the compressed layer, the config and the manifest.
	Size map[string]int64
}

// Build compiles every target for every platform and writes each target's image.
func Build(ctx context.Context, o Options, targets []Target) ([]Image, error) {
	if len(o.Platforms) == 0 {
		o.Platforms = []string{"linux/" + runtime.GOARCH}
	}
	if o.Repository == "" {
		o.Repository = "tidemark/"
	}
	work, err := os.MkdirTemp("", "tidemark-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	built := map[string]map[string]v1.Image{} // target -> platform -> image
	for _, p := range o.Platforms {
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok || goos != "linux" {
			return nil, fmt.Errorf("platform %q: want linux/<arch>", p)
		}
		bin := filepath.Join(work, goos+"-"+goarch)
		if err := compile(ctx, o, goarch, bin, targets); err != nil {
			return nil, err
		}
		for _, t := range targets {
			img, err := image(filepath.Join(bin, t.Binary()), t, o, goarch)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", t.Name, p, err)
			}
			if built[t.Name] == nil {
				built[t.Name] = map[string]v1.Image{}
			}
			built[t.Name][p] = img
		}
	}
	var out []Image
	for _, t := range targets {
		res := Image{Name: t.Name, Ref: o.Repository + t.Name + ":" + o.Version, Dir: filepath.Join(o.Out, t.Name), Size: map[string]int64{}}
		if err := write(res, o.Platforms, built[t.Name]); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		for p, img := range built[t.Name] {
			size, err := storedSize(img)
			if err != nil {
				return nil, err
			}
			res.Size[p] = size
		}
		out = append(out, res)
	}
	return out, nil
}

// compile builds every target's main package into dir, static, in one go build.
func compile(ctx context.Context, o Options, goarch, dir string, targets []Target) error {
	args := []string{"build", "-trimpath", "-ldflags", LDFlags(o.Version, o.Revision), "-o", dir + string(filepath.Separator)}
	for _, t := range targets {
		args = append(args, t.Main)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// epoch is every file's and the image's creation time, so that the same sources give the same image.
var epoch = time.Unix(0, 0).UTC()

func image(binary string, t Target, o Options, goarch string) (v1.Image, error) {
	b, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"usr/", "usr/local/", "usr/local/bin/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(BinaryPath(t.Binary()), "/"),
		Mode: 0o755, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(b); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", goarch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Author = Source
	cfg.Config = v1.Config{
		Entrypoint: []string{BinaryPath(t.Binary())},
		User:       User,
		WorkingDir: "/",
		Labels:     Labels(t.Name, o.Version, o.Revision),
		Env:        []string{"PATH=/usr/local/bin"},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}

func write(res Image, platforms []string, imgs map[string]v1.Image) error {
	if err := os.RemoveAll(res.Dir); err != nil {
		return err
	}
	p, err := layout.Write(res.Dir, empty.Index)
	if err != nil {
		return err
	}
	ref := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": res.Ref})
	if len(platforms) == 1 {
		return p.AppendImage(imgs[platforms[0]], ref)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, pl := range platforms {
		goos, goarch, _ := strings.Cut(pl, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: imgs[pl],
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}}})
	}
	return p.AppendIndex(idx, ref)
}

func storedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	size := m.Config.Size + int64(len(raw))
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}
