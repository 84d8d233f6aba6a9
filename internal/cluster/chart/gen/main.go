// Command gen writes the charts' templates generated from internal/cluster/admission
// (deploy/chart/sidesync-injector/templates/webhooks.yaml, backstop.yaml and _admission.tpl) and
// from internal/cluster/rescue (deploy/chart/sidesync-rescuer/templates/policy.yaml and _rescue.tpl). It
// is run by `go generate ./internal/cluster/chart`.
package main

import (
	"fmt"
	"os"

	"github.com/sidesync/sidesync/internal/cluster/chart"
)

func main() {
	for _, ch := range chart.Charts() {
		if err := ch.WriteGenerated(); err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", string(ch), err)
			os.Exit(1)
		}
	}
}
