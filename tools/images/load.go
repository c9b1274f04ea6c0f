package images

import (
	"archive/tar"
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
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			inner, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			im, err := inner.IndexManifest()
			if err != nil {
				return nil, err
			}
			for _, id := range im.Manifests {
				if id.Platform != nil && id.Platform.OS == "linux" && id.Platform.Architecture == arch {
					return inner.Image(id.Digest)
				}
			}
		case d.MediaType.IsImage():
			img, err := idx.Image(d.Digest)
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
