// Command imagetar writes test images as one docker archive for kubetest's ImportImages: the
// images as JSON (a list of kubetest.Image, without Raw) on stdin, the archive's path as its one
// argument. It runs outside the test binary, built without the race detector, under which the
// copying and hashing of the images' megabytes is tens of times slower.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stderr))
}

// run writes the archive and returns the exit code: 2 for a wrong command line, 1 for a failure.
func run(args []string, stdin io.Reader, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: imagetar ARCHIVE < images.json")
		return 2
	}
	var images []kubetest.Image
	if err := json.NewDecoder(stdin).Decode(&images); err != nil {
		fmt.Fprintf(stderr, "imagetar: reading the images: %v\n", err)
		return 1
	}
	if err := kubetest.WriteImageArchive(args[0], images); err != nil {
		fmt.Fprintf(stderr, "imagetar: %v\n", err)
		return 1
	}
	return 0
}
