package devstack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/kit"
	"github.com/tidemark/tidemark/tools/devstack"
)

// TestREADMEListsEveryVariable: a platform team finds every knob of every service in the README.
func TestREADMEListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range devstack.Services() {
		vars := kit.Variables(svc)
		if len(vars) < 10 {
			t.Fatalf("%s reads only %d variables", svc.Name, len(vars))
		}
		for _, v := range vars {
			if !strings.Contains(string(readme), "`"+v.Name+"`") {
				t.Errorf("README.md does not list %s (read by %s)", v.Name, svc.Name)
			}
		}
	}
}
