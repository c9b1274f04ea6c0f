// Package images builds the mesh's container images without a Docker daemon: each deployable's main
// package compiled into a static binary, put on an empty base as the only layer, run as uid 10001,
// labelled with its source, version and revision, and written as an OCI image layout. The
// Dockerfile (deploy writes it, a target per deployable) produces the same entrypoint, user and labels.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
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
	"github.com/google/go-containerregistry/pkg/v1/partial"
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

// The OCI annotations of what differs between the images.
const (
	// TitleLabel names the deployable an image runs.
	TitleLabel = "org.opencontainers.image.title"
	// DescriptionLabel says what it does.
	DescriptionLabel = "org.opencontainers.image.description"
)

// SharedLabels are the OCI annotations every image carries: where it comes from, its version and
// revision, and, when the repository declares one, its licence (an SPDX expression; see License).
func SharedLabels(version, revision, license string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.url":      Source,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.revision": revision,
	}
	if license != "" {
		l["org.opencontainers.image.licenses"] = license
	}
	return l
}

// Labels are the target's own annotations: its title and description.
func (t Target) Labels() map[string]string {
	return map[string]string{TitleLabel: "tidemark-" + t.Name, DescriptionLabel: t.Summary}
}

// Labels are an image's OCI annotations, in its config and on its manifest: the shared ones and
// the target's own.
func Labels(t Target, version, revision, license string) map[string]string {
	l := SharedLabels(version, revision, license)
	maps.Copy(l, t.Labels())
	return l
}

// License is the SPDX expression the repository at root declares on a
// "SPDX-License-Identifier:" line of its LICENSE file; "" when it has none, and then images carry
// no licence annotation rather than a guessed one.
func License(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if _, id, ok := strings.Cut(line, "SPDX-License-Identifier:"); ok {
			return strings.TrimSpace(id), nil
		}
	}
	return "", nil
}

// LDFlags are the linker flags of a release binary: no symbol tables, the version stamped.
func LDFlags(version, revision string) string {
	return fmt.Sprintf("-s -w -X %[1]s.version=%[2]s -X %[1]s.revision=%[3]s", VersionPackage, version, revision)
}

// Target is one image: Name names it (tidemark/<Name>), Main is its main package relative to the
// repository root, Summary its description.
type Target struct {
	Name    string
	Main    string
	Summary string
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
	// License is the images' licence annotation; empty means License(Root).
	License string
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
	if o.License == "" {
		license, err := License(o.Root)
		if err != nil {
			return nil, err
		}
		o.License = license
	}
	work, err := os.MkdirTemp("", "tidemark-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	built := map[string]map[string]v1.Image{} // target -> platform -> image
	sboms := map[string]map[string][]byte{}   // target -> platform -> SPDX document
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
			doc, err := SPDX(filepath.Join(bin, t.Binary()), t, o, p)
			if err != nil {
				return nil, fmt.Errorf("%s %s: SBOM: %w", t.Name, p, err)
			}
			if built[t.Name] == nil {
				built[t.Name], sboms[t.Name] = map[string]v1.Image{}, map[string][]byte{}
			}
			built[t.Name][p], sboms[t.Name][p] = img, doc
		}
	}
	var out []Image
	for _, t := range targets {
		res := Image{Name: t.Name, Ref: o.Repository + t.Name + ":" + o.Version, Dir: filepath.Join(o.Out, t.Name), Size: map[string]int64{}}
		if err := write(res, o.Platforms, built[t.Name], sboms[t.Name], Labels(t, o.Version, o.Revision, o.License)); err != nil {
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
		Labels:     Labels(t, o.Version, o.Revision, o.License),
		Env:        []string{"PATH=/usr/local/bin"},
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	// Registries and scanners read the manifest's annotations without fetching the config.
	img = mutate.Annotations(mutate.ConfigMediaType(img, types.OCIConfigJSON), cfg.Config.Labels).(v1.Image)
	return img, nil
}

// write writes one image index of the platforms' images and, beside each, its SBOM as an OCI
// artifact whose subject is that image (platform unknown/unknown, so that no runtime picks it): one
// entry in the layout, which any OCI tool pushes whole, referrers included.
func write(res Image, platforms []string, imgs map[string]v1.Image, sboms map[string][]byte, labels map[string]string) error {
	if err := os.RemoveAll(res.Dir); err != nil {
		return err
	}
	p, err := layout.Write(res.Dir, empty.Index)
	if err != nil {
		return err
	}
	idx := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Annotations: labels}
	for _, pl := range platforms {
		img := imgs[pl]
		if err := p.WriteImage(img); err != nil {
			return err
		}
		d, err := partial.Descriptor(img)
		if err != nil {
			return err
		}
		goos, goarch, _ := strings.Cut(pl, "/")
		// ggcr gives an image's descriptor its config's media type as artifact type; an image is not an artifact.
		d.Platform, d.Annotations, d.ArtifactType = &v1.Platform{OS: goos, Architecture: goarch}, nil, ""
		idx.Manifests = append(idx.Manifests, *d)
	}
	for _, pl := range platforms {
		d, err := writeSBOM(p, imgs[pl], sboms[pl], res.Name, pl)
		if err != nil {
			return fmt.Errorf("SBOM of %s: %w", pl, err)
		}
		d.Platform = &v1.Platform{OS: "unknown", Architecture: "unknown"}
		idx.Manifests = append(idx.Manifests, d)
	}
	raw, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	h, err := writeBlob(p, raw)
	if err != nil {
		return err
	}
	return p.AppendDescriptor(v1.Descriptor{MediaType: types.OCIImageIndex, Size: int64(len(raw)), Digest: h,
		Annotations: map[string]string{"org.opencontainers.image.ref.name": res.Ref}})
}

// writeBlob stores b in the layout by its digest.
func writeBlob(p layout.Path, b []byte) (v1.Hash, error) {
	h, _, err := v1.SHA256(bytes.NewReader(b))
	if err != nil {
		return h, err
	}
	return h, p.WriteBlob(h, io.NopCloser(bytes.NewReader(b)))
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
