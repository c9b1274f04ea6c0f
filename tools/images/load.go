package images

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Load reads the image for linux/arch from the OCI layout dir (an image, or an index of several).
func Load(dir, arch string) (v1.Image, error) {
	if arch == "" {
		arch = runtime.GOARCH
	}
	es, err := entries(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		d := e.desc
		switch {
		case !d.MediaType.IsImage() || d.ArtifactType == SBOMArtifactType:
		case d.Platform != nil:
			if d.Platform.OS == "linux" && d.Platform.Architecture == arch {
				return e.in.Image(d.Digest)
			}
		default: // a lone image says its platform in its config
			img, err := e.in.Image(d.Digest)
			if err != nil {
				return nil, err
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				return nil, err
			}
			if cfg.OS == "linux" && cfg.Architecture == arch {
				return img, nil
			}
		}
	}
	return nil, fmt.Errorf("%s: no linux/%s image", dir, arch)
}

// SBOM is the SPDX document stored beside the linux/arch image of the OCI layout dir: the
// artifact of type SBOMArtifactType, in the image's index, whose subject is that image.
func SBOM(dir, arch string) ([]byte, error) {
	img, err := Load(dir, arch)
	if err != nil {
		return nil, err
	}
	want, err := img.Digest()
	if err != nil {
		return nil, err
	}
	es, err := entries(dir)
	if err != nil {
		return nil, err
	}
	p := layout.Path(dir)
	for _, e := range es {
		if e.desc.ArtifactType != SBOMArtifactType {
			continue
		}
		raw, err := p.Bytes(e.desc.Digest)
		if err != nil {
			return nil, err
		}
		var art v1.Manifest
		if err := json.Unmarshal(raw, &art); err != nil {
			return nil, fmt.Errorf("%s: artifact %s: %w", dir, e.desc.Digest, err)
		}
		if art.Subject != nil && art.Subject.Digest == want && len(art.Layers) == 1 && art.Layers[0].MediaType == SBOMArtifactType {
			return p.Bytes(art.Layers[0].Digest)
		}
	}
	return nil, fmt.Errorf("%s: no SBOM of the linux/%s image %s", dir, arch, want)
}

// entry is a manifest of a layout with the index that lists it.
type entry struct {
	in   v1.ImageIndex
	desc v1.Descriptor
}

// entries are the manifests of the layout dir: those its index.json lists, and in place of an
// index, the manifests it lists.
func entries(dir string) ([]entry, error) {
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, d := range m.Manifests {
		if !d.MediaType.IsIndex() {
			out = append(out, entry{top, d})
			continue
		}
		inner, err := top.ImageIndex(d.Digest)
		if err != nil {
			return nil, err
		}
		im, err := inner.IndexManifest()
		if err != nil {
			return nil, err
		}
		for _, id := range im.Manifests {
			out = append(out, entry{inner, id})
		}
	}
	return out, nil
}

// ExtractFile writes the file at path in img's filesystem to dst, executable.
func ExtractFile(img v1.Image, path, dst string) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(path, "/")
	// The last layer that has the file holds its content.
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return err
		}
		found, err := copyFrom(tar.NewReader(rc), name, dst)
		rc.Close()
		if err != nil || found {
			return err
		}
	}
	return fmt.Errorf("%s is in no layer", path)
}

func copyFrom(tr *tar.Reader, name, dst string) (bool, error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if strings.TrimPrefix(h.Name, "./") != name {
			continue
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return true, err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return true, err
		}
		return true, f.Close()
	}
}
