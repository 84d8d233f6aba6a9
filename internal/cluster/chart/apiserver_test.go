package chart

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// TestAPIServerAccepts sends every object the chart makes, for each case's values, to a real
// kube-apiserver of each supported release (kubetest.Versions: the oldest and the newest), as
// the chart renders for that release (a dry run, with strict field validation: an unknown or
// misplaced field is an error), and creates a pod from the Deployment's template in a namespace
// that enforces the restricted Pod Security Standard. Values the release cannot take are
// refused by the chart. Skips when kubetest's binaries are missing.
func TestAPIServerAccepts(t *testing.T) {
	for _, v := range kubetest.Versions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			c := kubetest.StartWith(t, kubetest.Options{Version: v})
			for i, rc := range renderCases() {
				t.Run(rc.name, func(t *testing.T) { acceptedOn(t, c, fmt.Sprintf("sidesync-system-%d", i), rc) })
			}
		})
	}
}

// acceptedOn renders rc for c's release and sends its objects to c, in namespace ns.
func acceptedOn(t *testing.T, c *kubetest.Cluster, ns string, rc renderCase) {
	objs, err := Injector.RenderOn(c.Version, rc.values, ns)
	kv, verr := kubeversion.Parse(c.Version)
	if verr != nil {
		t.Fatal(verr)
	}
	if rc.imageVolume && !kubeversion.ImageVolume.In(kv) {
		if err == nil || !strings.Contains(err.Error(), "image volumes") {
			t.Errorf("image-volume delivery on %s: %v, want the chart's refusal", c.Version, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	c.CreateNamespaceLabelled(t, ns, map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	})
	for _, o := range objs {
		kind := o["kind"].(string)
		path, served := kubetest.CollectionPath(o, ns)
		if !served {
			if !strings.HasPrefix(o["apiVersion"].(string), "cert-manager.io/") {
				t.Errorf("no path for %s", kind)
			}
			continue
		}
		if kind == "ServiceAccount" {
			// Created for real: the pod below runs as it.
			c.Create(t, path, o)
			continue
		}
		r := c.Send(t, "POST", path+"?dryRun=All&fieldValidation=Strict", o)
		if r.Code != 201 || len(r.Warnings) > 0 {
			t.Errorf("%s %v: %d %s, warnings %q", kind, nameOf(o), r.Code, r.Body, r.Warnings)
		}
	}
	tmpl := dig(Find(objs, "Deployment", ReleaseName), "spec", "template")
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "injector", "namespace": ns, "labels": dig(tmpl, "metadata")["labels"]},
		"spec":     tmpl["spec"],
	}
	r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All&fieldValidation=Strict", pod)
	if r.Code != 201 || len(r.Warnings) > 0 {
		t.Errorf("the injector's pod in a restricted namespace: %d %s, warnings %q", r.Code, r.Body, r.Warnings)
	}
}

// TestAPIServerAcceptsRescuer sends every object of the rescuer's chart, for each case's
// values, to a real kube-apiserver (a dry run, with strict field validation), and a pod from
// the Deployment's template into a namespace that enforces the restricted Pod Security
// Standard. cmd/sidesync-rescuer creates them for real and runs the rescuer under them.
func TestAPIServerAcceptsRescuer(t *testing.T) {
	c := kubetest.Start(t)
	for i, rc := range rescuerCases() {
		t.Run(rc.name, func(t *testing.T) {
			ns := fmt.Sprintf("rescuer-system-%d", i)
			c.CreateNamespaceLabelled(t, ns, map[string]string{
				"pod-security.kubernetes.io/enforce": "restricted",
				"pod-security.kubernetes.io/warn":    "restricted",
			})
			objs, err := Rescuer.Render(rc.values, ns)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				kind := o["kind"].(string)
				path, served := kubetest.CollectionPath(o, ns)
				if !served {
					t.Errorf("no path for %s", kind)
					continue
				}
				if kind == "ServiceAccount" {
					c.Create(t, path, o)
					continue
				}
				r := c.Send(t, "POST", path+"?dryRun=All&fieldValidation=Strict", o)
				if r.Code != 201 || len(r.Warnings) > 0 {
					t.Errorf("%s %v: %d %s, warnings %q", kind, nameOf(o), r.Code, r.Body, r.Warnings)
				}
			}
			tmpl := dig(Find(objs, "Deployment", rc.fullname), "spec", "template")
			pod := map[string]any{
				"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": "rescuer", "namespace": ns, "labels": dig(tmpl, "metadata")["labels"]},
				"spec":     tmpl["spec"],
			}
			r := c.Send(t, "POST", "/api/v1/namespaces/"+ns+"/pods?dryRun=All&fieldValidation=Strict", pod)
			if r.Code != 201 || len(r.Warnings) > 0 {
				t.Errorf("the rescuer's pod in a restricted namespace: %d %s, warnings %q", r.Code, r.Body, r.Warnings)
			}
		})
	}
}
