package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// The self-managed certificates' side of the webhook configurations: whether they trust a CA,
// and writing the bundle into them.

// hookConfig is one webhook configuration, watched by name.
type hookConfig struct {
	kind, name string
	informer   cache.SharedIndexInformer
	patch      func(ctx context.Context, data []byte) error
}

// trusted reports whether every webhook of both configurations has ca in its caBundle.
func (s *selfCerts) trusted(ca *x509.Certificate) bool {
	for _, h := range s.hooks {
		_, hooks, ok := h.current()
		if !ok {
			return false
		}
		for _, w := range hooks {
			if !holdsAll(w.bundle, ca) {
				return false
			}
		}
	}
	return true
}

// webhookCA is one webhook's name and caBundle.
type webhookCA struct {
	name   string
	bundle []byte
}

// current is the configuration's resourceVersion and its webhooks in order, from the watch.
func (h *hookConfig) current() (rv string, hooks []webhookCA, ok bool) {
	obj, ok, err := h.informer.GetStore().GetByKey(h.name)
	if err != nil || !ok {
		return "", nil, false
	}
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			hooks = append(hooks, webhookCA{w.Name, w.ClientConfig.CABundle})
		}
		return c.ResourceVersion, hooks, true
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range c.Webhooks {
			hooks = append(hooks, webhookCA{w.Name, w.ClientConfig.CABundle})
		}
		return c.ResourceVersion, hooks, true
	}
	return "", nil, false
}

// writeBundles puts the Secret's bundle into every webhook of both configurations that lacks
// it: a JSON Patch of their caBundle only, tested against the resourceVersion and the webhooks'
// names it was made from. Before writing, it reads the Secret again from the API server: a
// replica whose watch is behind must not put back an older bundle.
func (s *selfCerts) writeBundles(ctx context.Context, sec *corev1.Secret) error {
	bundle := sec.Data[keyCABundle]
	var missing []string
	fresh := false
	for _, h := range s.hooks {
		rv, hooks, ok := h.current()
		if !ok {
			missing = append(missing, h.kind+" "+h.name)
			continue
		}
		ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": rv}}
		for i, w := range hooks {
			if string(w.bundle) != string(bundle) {
				p := fmt.Sprintf("/webhooks/%d", i)
				ops = append(ops, map[string]any{"op": "test", "path": p + "/name", "value": w.name},
					map[string]any{"op": "add", "path": p + "/clientConfig/caBundle", "value": bundle})
			}
		}
		if len(ops) == 1 {
			continue
		}
		if !fresh {
			now, err := s.freshSecret(ctx)
			if err != nil {
				return err
			}
			if now == nil || now.ResourceVersion != sec.ResourceVersion {
				s.poke() // the watch is behind: decide again once it has caught up
				return nil
			}
			fresh = true
		}
		data, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		err = h.patch(ctx, data)
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			// A test of the patch failed: the configuration changed since the watch showed it
			// (another replica wrote the bundle, a helm upgrade). Its event calls again.
			s.log.Info("the webhook configuration changed while the caBundle was written: again from its change", "kind", h.kind, "name", h.name, "err", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("writing the caBundle of %s %s: %w", h.kind, h.name, err)
		}
		s.log.Info("caBundle written", "kind", h.kind, "name", h.name, "webhooks", (len(ops)-1)/2)
	}
	if len(missing) > 0 {
		// Helm creates the configurations after the Deployment: their watch's event calls again.
		s.log.Info("waiting for the webhook configurations, to write their caBundle", "missing", missing)
		return nil
	}
	if !s.written.Load() {
		for _, h := range s.hooks {
			if _, hooks, _ := h.current(); !allEqual(hooks, bundle) {
				return nil // written, not yet seen: the watch's event calls again
			}
		}
		s.written.Store(true)
		s.log.Info("the webhook configurations trust the certificate")
	}
	return nil
}

func allEqual(hooks []webhookCA, bundle []byte) bool {
	for _, w := range hooks {
		if string(w.bundle) != string(bundle) {
			return false
		}
	}
	return true
}
