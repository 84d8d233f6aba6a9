package lint

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	stream "github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// Decode reads manifests as kubectl takes them, with the reader kubectl sidesync inject uses:
// YAML documents separated by "---", or a stream of JSON objects. It returns the Pods, Jobs and
// CronJobs among them, a List's items included (an item of a typed list, a PodList, may leave
// out its kind), in the order they come; objects of other kinds are skipped, and so are empty
// documents; a Pod, Job or CronJob of an API version sidesync does not read is returned with
// Unsupported set, and with its pod when Kubernetes no longer serves the version and the pod is
// where the current version has it (a batch/v1beta1 CronJob). A document that is not YAML or JSON, has a key twice, or holds an object
// whose fields sidesync reads have the wrong types, is an error that names the document (counted
// from 1) and the field. Decode reads only data; Read reads a stream.
func Decode(data []byte) ([]Object, error) {
	return Read(bytes.NewReader(data))
}

// Read is Decode on a stream, with the reader's bounds: a stream larger than
// stream.MaxInput is refused after reading at most that much of it.
func Read(r io.Reader) ([]Object, error) {
	docs, _, err := stream.Read(r)
	if err != nil {
		return nil, err
	}
	var objs []Object
	err = stream.Each(docs, func(item map[string]any, tm manifest.TypeMeta, where string) (map[string]any, error) {
		o, ok, err := objectOf(item, tm)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if ok {
			objs = append(objs, o)
		}
		return item, nil
	})
	return objs, err
}

// objectOf reads one object; ok is false for an object of a kind lint does not read.
func objectOf(obj map[string]any, tm manifest.TypeMeta) (Object, bool, error) {
	w, err := manifest.Locate(obj, tm)
	var unsupported *manifest.Unsupported
	switch {
	case errors.As(err, &unsupported) && unsupported.Workload != nil:
		// A version no longer served, whose pod is the current version's: its pod's findings
		// come with the upgrade, rather than after it.
		o, err := FromWorkload(unsupported.Workload)
		if err != nil {
			return Object{}, false, fmt.Errorf("%s: %w", unsupported.Name, err)
		}
		o.Unsupported = unsupported.Reason
		return o, true, nil
	case errors.As(err, &unsupported):
		return Object{Name: unsupported.Name, Unsupported: unsupported.Reason}, true, nil
	case err != nil:
		return Object{}, false, err
	case w == nil:
		return Object{}, false, nil
	}
	o, err := FromWorkload(w)
	if err != nil {
		return Object{}, false, fmt.Errorf("%s: %w", w.Name, err)
	}
	return o, true, nil
}
