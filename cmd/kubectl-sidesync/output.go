package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// output is an -o/--output flag: one of formats, the first the default.
type output struct {
	value   string
	formats []string
}

// addOutputFlag adds -o/--output with its formats, the first the default ("" for a default
// that is not a format: inject writes each document as it was read).
func addOutputFlag(cmd *cobra.Command, o *output, def string, formats ...string) {
	o.formats = formats
	cmd.Flags().StringVarP(&o.value, "output", "o", def, "the output format: one of "+strings.Join(formats, "|"))
	completeValues(cmd, "output", formats...)
}

// completeValues makes the shell complete a flag's values from a fixed list.
func completeValues(cmd *cobra.Command, flag string, values ...string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// check is the flag's error, naming the formats, as kubectl's printers do.
func (o output) check() error {
	if o.value == "" || slices.Contains(o.formats, o.value) {
		return nil
	}
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s",
		o.value, strings.Join(o.formats, ","))
}

// printDoc writes v as JSON (indented by two spaces, as kubectl -o json) or YAML (through its
// JSON, so that the two have the same fields).
func printDoc(w io.Writer, format string, v any) error {
	if format == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
