// Command deploygen writes the files that follow from the deployables' declarations (make generate):
// the chart's mesh table, CRD copy, values schema and README, and each deployable's Dockerfile.
package main

import (
	"fmt"
	"os"

	"github.com/tidemark/tidemark/tools/deploy"
)

func main() {
	root, err := deploy.Root()
	if err == nil {
		err = deploy.Write(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "deploygen:", err)
		os.Exit(1)
	}
}
