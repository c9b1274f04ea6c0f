package testbed_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark/tidemark/platform/testbed"
)

func TestDirIsToolsBinOfTheWorkspace(t *testing.T) {
	dir, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(dir))
	if filepath.Base(dir) != "bin" || filepath.Base(filepath.Dir(dir)) != ".tools" {
		t.Errorf("Dir = %s, want <root>/.tools/bin", dir)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Errorf("no go.work in %s: %v", root, err)
	}

	t.Chdir(t.TempDir())
	if _, err := testbed.Dir(); err == nil {
		t.Error("Dir found a workspace above a temporary folder")
	}
}
