package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidesync/sidesync/internal/inject/manifest"
)

// Decode reads manifests as kubectl takes them, with the reader kubectl sidesync inject uses
// (internal/inject/manifest): YAML documents separated by "---", or a stream of JSON objects. It
// returns the Pods, Jobs and CronJobs among them, a List's items included, in the order they
// come; objects of other kinds are skipped, and so are empty documents. A document that is not
// YAML or JSON, has a key twice, is not an object with a kind, or holds a Pod, Job or CronJob
// whose fields have the wrong types, is an error that names the document (counted from 1).
// Decode reads only data; Read reads a stream.
func Decode(data []byte) ([]Object, error) {
	return Read(bytes.NewReader(data))
}

// Read is Decode on a stream, with the reader's bounds: a stream larger than
// manifest.MaxInput is refused after reading at most that much of it.
func Read(r io.Reader) ([]Object, error) {
	docs, _, err := manifest.Read(r)
	if err != nil {
		return nil, err
	}
	var objs []Object
	for _, d := range docs {
		if d.Object == nil {
			continue
		}
		raw, err := json.Marshal(d.Object)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", d.N, err)
		}
		got, err := decodeObject(raw, typeMeta{})
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", d.N, err)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// typeMeta is what says what an object is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// decodeObject decodes one object, or the items of a List. An item of a typed list
// (PodList, JobList) may leave out its kind: it is then the list's, less "List".
func decodeObject(raw json.RawMessage, inherited typeMeta) ([]Object, error) {
	var head struct {
		typeMeta
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if head.Kind == "" {
		head.typeMeta = inherited
	}
	if head.Kind == "" {
		return nil, errors.New("not a Kubernetes object: it has no kind")
	}
	if strings.HasSuffix(head.Kind, "List") {
		return decodeItems(head.Items, typeMeta{APIVersion: head.APIVersion, Kind: strings.TrimSuffix(head.Kind, "List")})
	}
	group, _, _ := strings.Cut(head.APIVersion, "/")
	if !strings.Contains(head.APIVersion, "/") {
		group = "" // the core group: "v1"
	}
	var err error
	var obj Object
	switch {
	case head.Kind == "Pod" && group == "":
		var p corev1.Pod
		err = json.Unmarshal(raw, &p)
		obj = FromPod(&p)
	case head.Kind == "Job" && group == "batch":
		var j batchv1.Job
		err = json.Unmarshal(raw, &j)
		obj = FromJob(&j)
	case head.Kind == "CronJob" && group == "batch":
		var c batchv1.CronJob
		err = json.Unmarshal(raw, &c)
		obj = FromCronJob(&c)
	default:
		return nil, nil // not a workload lint reads
	}
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", head.Kind, head.Metadata.Name, err)
	}
	return []Object{obj}, nil
}

// decodeItems decodes the items of a List; an item without a kind is of kind inherited (none for
// a plain List).
func decodeItems(items []json.RawMessage, inherited typeMeta) ([]Object, error) {
	var objs []Object
	for i, item := range items {
		got, err := decodeObject(item, inherited)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i+1, err)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}
