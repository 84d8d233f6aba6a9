// Command gen writes the chart's templates generated from internal/admission
// (deploy/chart/sidesync-injector/templates/webhooks.yaml and _admission.tpl). It is run by
// `go generate ./internal/chart`.
package main

import (
	"fmt"
	"os"

	"github.com/sidesync/sidesync/internal/chart"
)

func main() {
	dir, err := chart.Dir()
	if err == nil {
		err = chart.WriteGenerated(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
