package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
		what+": a file, a directory (its "+strings.Join(resource.FileExtensions, ", ")+" files),\nan http(s) URL, or - for stdin; repeatable or comma-separated; none: stdin")
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false,
		"process the directories given with -f recursively, as kubectl does")
}

// paths expands the -f values into the files to read, in order, as kubectl's resource.Builder
// does (FilenameParam, Path, ExpandPathsToFileVisitors, expandIfFilePattern in
// k8s.io/cli-runtime/pkg/resource): "-" is stdin, once at most; a path that does not exist is
// a glob pattern or an error; a directory is its files with kubectl's extensions
// (resource.FileExtensions) in lexical order, the directories below it only with -R; a file
// named explicitly is read whatever its extension; an http(s) URL is fetched when it is read
// (open).
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
		case isURL(name):
			if _, err := url.Parse(name); err != nil {
				return nil, fmt.Errorf("the URL passed to filename %q is not valid: %w", name, err)
			}
			paths = append(paths, name)
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

// isURL reports whether an -f value is a URL, as kubectl's FilenameParam tells them.
func isURL(name string) bool {
	return strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")
}

// URLs are fetched as kubectl fetches them (readHttpWithRetries in
// k8s.io/cli-runtime/pkg/resource/visitor.go, unexported): a GET, up to urlAttempts times a
// urlRetryDelay apart while the request fails or the server answers 5xx; any other answer but
// 200 is final. Unlike kubectl, each attempt is bounded by urlTimeout, so a server that never
// answers cannot hang the command.
const (
	urlAttempts   = 3
	urlRetryDelay = time.Second
	urlTimeout    = time.Minute
)

// open opens a path that paths returned: stdin for "-", the body of a URL.
func open(path string, stdin io.Reader) (r io.Reader, closeFn func(), err error) {
	if path == stdinName {
		return stdin, func() {}, nil
	}
	if isURL(path) {
		return openURL(path, urlRetryDelay)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return f, func() { f.Close() }, nil
}

// openURL fetches u as kubectl does (urlAttempts), waiting delay between attempts. The body is
// read to its end within urlTimeout of the attempt's start.
func openURL(u string, delay time.Duration) (io.Reader, func(), error) {
	client := &http.Client{Timeout: urlTimeout}
	var err error
	for i := range urlAttempts {
		if i > 0 {
			time.Sleep(delay)
		}
		var resp *http.Response
		if resp, err = client.Get(u); err != nil {
			err = fmt.Errorf("reading %s: %w", u, err)
			continue
		}
		if resp.StatusCode == http.StatusOK {
			return resp.Body, func() { resp.Body.Close() }, nil
		}
		resp.Body.Close()
		err = fmt.Errorf("unable to read URL %q, server reported %s, status code=%d", u, resp.Status, resp.StatusCode)
		if resp.StatusCode < 500 || resp.StatusCode > 599 {
			break
		}
	}
	return nil, nil, err
}
