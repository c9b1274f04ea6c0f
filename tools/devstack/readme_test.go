package devstack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/platform/kit"
	txservice "github.com/tidemark/tidemark/services/tx/service"
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

// TestREADMEListsTxVariables: the tx service's knobs are in the README, and it reads nothing of
// Postgres, Kafka or page tokens, which the chart would otherwise give it.
func TestREADMEListsTxVariables(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range txservice.Variables() {
		if !strings.Contains(string(readme), "`"+v.Name+"`") {
			t.Errorf("README.md does not list %s (read by the tx service)", v.Name)
		}
		for _, unused := range []string{"TIDEMARK_PAGE_KEY", "TIDEMARK_PG_", "TIDEMARK_KAFKA_", "TIDEMARK_S3_"} {
			if strings.HasPrefix(v.Name, unused) {
				t.Errorf("the tx service reads %s, which it has no use for", v.Name)
			}
		}
	}
}
