//go:build linux

package kubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// errWatchDone ends a watch whose objects reached the state waited for.
var errWatchDone = errors.New("done")

// WaitList waits on the API server's events, not by polling: it lists the collection at path
// (selected by query: labelSelector, fieldSelector), calls done with its objects (sorted by
// namespace and name), then watches the collection from the list's resourceVersion and calls
// done again after every event, until done returns true (WaitList returns nil) or ctx ends
// (WaitList returns its cause). A watch that ends or expires starts again from a new list.
//
// Many tests waiting at once on one node is cheap this way: an idle wait costs nothing, where
// each poll cost a request and the decoding of a whole object in the (race-instrumented) test.
func (c *Cluster) WaitList(ctx context.Context, path string, query url.Values, done func(items []json.RawMessage) bool) error {
	for {
		objs, rv, err := c.list(ctx, path, query)
		if err == nil {
			if done(sortedObjects(objs)) {
				return nil
			}
			err = c.watch(ctx, path, query, rv, objs, done)
			if errors.Is(err, errWatchDone) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("%w (last: %v)", context.Cause(ctx), err)
			}
			return context.Cause(ctx)
		case <-time.After(pollInterval): // a new list after a watch that ended: not a poll of the state
		}
	}
}

// objectMeta is what WaitList reads of an object.
type objectMeta struct {
	Metadata struct{ Namespace, Name, ResourceVersion string }
}

// key names an object in WaitList's map.
func (m objectMeta) key() string { return m.Metadata.Namespace + "/" + m.Metadata.Name }

// list returns the collection's objects by key, and its resourceVersion.
func (c *Cluster) list(ctx context.Context, path string, query url.Values) (map[string]json.RawMessage, string, error) {
	code, body, _, err := c.roundTrip(ctx, c.AdminToken, http.MethodGet, withQuery(path, query), nil)
	if err != nil {
		return nil, "", err
	}
	if code != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s: %d: %s", path, code, body)
	}
	var l struct {
		Metadata struct{ ResourceVersion string }
		Items    []json.RawMessage
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, "", err
	}
	objs := map[string]json.RawMessage{}
	for _, item := range l.Items {
		var m objectMeta
		if err := json.Unmarshal(item, &m); err != nil {
			return nil, "", err
		}
		objs[m.key()] = item
	}
	return objs, l.Metadata.ResourceVersion, nil
}

// watch applies the collection's events from rv to objs, calling done after each, until done
// returns true (errWatchDone), the watch ends, or ctx does.
func (c *Cluster) watch(ctx context.Context, path string, query url.Values, rv string, objs map[string]json.RawMessage, done func([]json.RawMessage) bool) error {
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	q.Set("watch", "true")
	q.Set("resourceVersion", rv)
	q.Set("allowWatchBookmarks", "true")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+withQuery(path, q), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	// The API client's timeout would cut the stream: ctx bounds it instead.
	resp, err := (&http.Client{Transport: c.client.Transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch %s: %d", path, resp.StatusCode)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string
			Object json.RawMessage
		}
		if err := dec.Decode(&ev); err != nil {
			return err // the stream ended: list again
		}
		var m objectMeta
		if err := json.Unmarshal(ev.Object, &m); err != nil {
			return err
		}
		switch ev.Type {
		case "ADDED", "MODIFIED":
			objs[m.key()] = ev.Object
		case "DELETED":
			delete(objs, m.key())
		case "BOOKMARK":
			continue
		default: // ERROR: the resourceVersion expired, say
			return fmt.Errorf("watch %s: %s", path, ev.Object)
		}
		if done(sortedObjects(objs)) {
			return errWatchDone
		}
	}
}

// sortedObjects returns the map's objects, sorted by key.
func sortedObjects(objs map[string]json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(objs))
	for _, k := range slices.Sorted(maps.Keys(objs)) {
		out = append(out, objs[k])
	}
	return out
}

// withQuery appends query to path.
func withQuery(path string, query url.Values) string {
	if len(query) == 0 {
		return path
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + query.Encode()
}

// NameIs is the query of one object of a collection, by name, for WaitList.
func NameIs(name string) url.Values {
	return url.Values{"fieldSelector": {"metadata.name=" + name}}
}
