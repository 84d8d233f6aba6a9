package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/resource"
)

// stdinName is how -f names standard input, as kubectl does.
const stdinName = "-"

// filenames are the -f and -R flags of the commands that read manifests.
type filenames struct {
	names     []string
	recursive bool
}

// addFlags adds -f/--filename and -R/--recursive with kubectl's names and meanings.
func (f *filenames) addFlags(cmd *cobra.Command, what string) {
	cmd.Flags().StringSliceVarP(&f.names, "filename", "f", nil,
		what+": a file, a directory (its "+strings.Join(resource.FileExtensions, ", ")+" files)\nor - for stdin; repeatable or comma-separated; none: stdin")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false,
		"process the directories given with -f recursively, as kubectl does")
}

// paths expands the -f values into the files to read, in order, as kubectl's resource.Builder
// does (FilenameParam, Path, ExpandPathsToFileVisitors, expandIfFilePattern in
// k8s.io/cli-runtime/pkg/resource): "-" is stdin, once at most; a path that does not exist is
// a glob pattern or an error; a directory is its files with kubectl's extensions
// (resource.FileExtensions) in lexical order, the directories below it only with -R; a file
// named explicitly is read whatever its extension. http(s) URLs are refused: kubectl fetches
// them, this plugin does not (curl URL | kubectl sidesync ... -f -).
func (f *filenames) paths() ([]string, error) {
	names := f.names
	if len(names) == 0 {
		names = []string{stdinName}
	}
	var paths []string
	for _, name := range names {
		switch {
		case name == stdinName:
			if slices.Contains(paths, stdinName) {
				return nil, resource.StdinMultiUseError
			}
			paths = append(paths, name)
		case strings.HasPrefix(name, "http://"), strings.HasPrefix(name, "https://"):
			return nil, fmt.Errorf("-f %s: URLs are not read; download the manifest and give its file, or pipe it to -f -", name)
		default:
			got, err := expandPath(name, f.recursive)
			if err != nil {
				return nil, err
			}
			paths = append(paths, got...)
		}
	}
	return paths, nil
}

// expandPath is one -f path: a glob pattern when no such path exists, then each match walked.
func expandPath(name string, recursive bool) ([]string, error) {
	matches := []string{name}
	if _, err := os.Stat(name); errors.Is(err, fs.ErrNotExist) {
		matches, err = filepath.Glob(name)
		if err != nil {
			return nil, fmt.Errorf("pattern %q is not valid: %w", name, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("the path %q does not exist", name)
		}
	} else if err != nil {
		return nil, fmt.Errorf("the path %q cannot be accessed: %w", name, err)
	}
	var paths []string
	for _, root := range matches {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && path != root && !recursive:
				return filepath.SkipDir
			case d.IsDir():
				return nil
			case path != root && !slices.Contains(resource.FileExtensions, filepath.Ext(path)):
				return nil // in a directory, only manifests; a file named is read as it is
			}
			paths = append(paths, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("error reading %q: %w", root, err)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("error reading %q: no files with the extensions %v", name, resource.FileExtensions)
	}
	return paths, nil
}

// open opens a path that paths returned: stdin for "-".
func open(path string, stdin io.Reader) (r io.Reader, closeFn func(), err error) {
	if path == stdinName {
		return stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return f, func() { f.Close() }, nil
}
