package main

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
)

// newVersionCmd is `kubectl sidesync version [-o json|yaml]`.
func newVersionCmd(e env) *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Prints this plugin's version, its commit and the Go it was built with. With -o json or yaml,
the same as a document shaped as kubectl version -o json's clientVersion.`,
		Example: `  kubectl sidesync version
  kubectl sidesync version -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(noArgs(args, "version takes only -o"), out.check()); err != nil {
				return usageErrorf(cmd, err)
			}
			if out.value == "" {
				fmt.Fprintln(e.stdout, e.build.Line("kubectl-sidesync"))
				return nil
			}
			doc := struct {
				ClientVersion version.Info `json:"clientVersion"`
			}{clientVersion(e)}
			if err := printDoc(e.stdout, out.value, doc); err != nil {
				fmt.Fprintf(e.stderr, "kubectl sidesync version: writing: %v\n", err)
				return exitCode(1)
			}
			return nil
		},
	}
	addOutputFlag(cmd, &out, "", "json", "yaml")
	return cmd
}

// clientVersion is the build as kubectl reports its own (k8s.io/apimachinery/pkg/version.Info):
// gitVersion, gitCommit, and major and minor when the version is a release's.
func clientVersion(e env) version.Info {
	v := version.Info{GitVersion: e.build.Version, GitCommit: e.build.Commit, GoVersion: runtime.Version(),
		Compiler: runtime.Compiler, Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if parts := strings.SplitN(strings.TrimPrefix(e.build.Version, "v"), ".", 3); strings.HasPrefix(e.build.Version, "v") && len(parts) == 3 {
		v.Major, v.Minor = parts[0], parts[1]
	}
	return v
}
