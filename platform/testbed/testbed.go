// Package testbed finds the real servers that scripts/testbed provisions for tests (kube-apiserver,
// etcd, kubectl, MinIO) in the repository's git-ignored .tools/bin.
package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir is .tools/bin of the repository holding the working directory (the nearest parent with a
// go.work), whether or not it exists yet.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testbed: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, ".tools", "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testbed: no go.work above the working directory")
		}
		dir = parent
	}
}
