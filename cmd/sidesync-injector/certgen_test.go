package main

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

// TestPlan walks the self-managed certificates through their lives on a fake clock: made,
// kept, the serving certificate renewed with a third of its lifetime left, the CA renewed the
// same way with the serving certificate moved to it only once the new CA is trusted, the old CA
// kept in the bundle until it expires, and a change of names.
func TestPlan(t *testing.T) {
	spec := certSpec{names: []string{"inj.ns.svc", "inj.ns.svc.cluster.local", "inj.ns"}, caLifetime: 90 * time.Hour, certLifetime: 30 * time.Hour}
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	never := func(*x509.Certificate) bool { return false }
	always := func(*x509.Certificate) bool { return true }
	step := func(t *testing.T, now time.Time, k *certKit, trusted func(*x509.Certificate) bool) (*certKit, bool, time.Time) {
		t.Helper()
		out, changed, next, err := plan(now, k, spec, trusted)
		if err != nil {
			t.Fatal(err)
		}
		// Every kit survives the Secret: what plan returns is what decodeKit reads back.
		data, err := out.encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeKit(data)
		if err != nil {
			t.Fatalf("decodeKit(encode()): %v", err)
		}
		if !back.leaf.Equal(out.leaf) || len(back.cas) != len(out.cas) || !back.caKey.Equal(out.caKey) {
			t.Fatal("decodeKit(encode()) is another kit")
		}
		checkServes(t, now, out, spec.names)
		return out, changed, next
	}

	k, changed, next := step(t, t0, nil, never)
	if !changed || len(k.cas) != 1 {
		t.Fatalf("from nothing: changed %v, %d CAs", changed, len(k.cas))
	}
	if want := t0.Add(spec.certLifetime - (spec.certLifetime+backdate(spec.certLifetime))/3); !next.Equal(want) {
		t.Errorf("next %s, want the serving certificate's renewal at %s", next, want)
	}
	ca0, leaf0 := k.cas[0], k.leaf

	if k2, changed, _ := step(t, next.Add(-time.Second), k, always); changed || !k2.leaf.Equal(leaf0) {
		t.Error("changed before the renewal")
	}
	k, changed, _ = step(t, next, k, never)
	if !changed || k.leaf.Equal(leaf0) || !k.cas[0].Equal(ca0) || len(k.cas) != 1 {
		t.Fatalf("at the renewal: changed %v, same leaf %v, same CA %v, %d CAs", changed, k.leaf.Equal(leaf0), k.cas[0].Equal(ca0), len(k.cas))
	}

	// The CA's turn: a new CA first in the bundle, the old one kept; the serving certificate
	// stays on the old CA while the new one is not trusted.
	caDue := renewAt(ca0)
	k, _, _ = step(t, caDue.Add(-time.Hour), k, never) // a fresh serving certificate just before
	leaf1 := k.leaf
	k, changed, _ = step(t, caDue, k, never)
	if !changed || len(k.cas) != 2 || !k.cas[1].Equal(ca0) || k.cas[0].Equal(ca0) {
		t.Fatalf("at the CA's renewal: changed %v, %d CAs", changed, len(k.cas))
	}
	if !k.leaf.Equal(leaf1) {
		t.Error("the serving certificate moved to a CA the API server does not trust yet")
	}
	if _, changed, _ := step(t, caDue.Add(time.Minute), k, never); changed {
		t.Error("changed again while the new CA is not trusted")
	}
	k, changed, _ = step(t, caDue.Add(time.Minute), k, always)
	if !changed || k.leaf.CheckSignatureFrom(k.cas[0]) != nil || len(k.cas) != 2 {
		t.Fatalf("the new CA trusted: changed %v, signed by the new CA %v, %d CAs", changed, k.leaf.CheckSignatureFrom(k.cas[0]) == nil, len(k.cas))
	}
	// The old CA leaves the bundle when it expires, not before.
	if k2, _, _ := step(t, ca0.NotAfter.Add(-time.Second), k, always); len(k2.cas) != 2 {
		t.Error("the old CA left the bundle before it expired")
	}
	if k2, changed, _ := step(t, ca0.NotAfter, k, always); !changed || len(k2.cas) != 1 {
		t.Errorf("the old CA expired: changed %v, %d CAs", changed, len(k2.cas))
	}

	// Other names (another Service): a new serving certificate from the same CA.
	other := spec
	other.names = []string{"x.ns.svc"}
	k2, changed, _, err := plan(caDue.Add(2*time.Minute), k, other, always)
	if err != nil || !changed || !slices.Equal(k2.leaf.DNSNames, other.names) || !k2.cas[0].Equal(k.cas[0]) {
		t.Errorf("new names: %v, changed %v, names %v", err, changed, k2.leaf.DNSNames)
	}
}

// checkServes fails unless kit's serving certificate verifies for every name at now against
// the bundle.
func checkServes(t *testing.T, now time.Time, k *certKit, names []string) {
	t.Helper()
	roots := x509.NewCertPool()
	for _, ca := range k.cas {
		roots.AddCert(ca)
	}
	for _, n := range names {
		if _, err := k.leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: roots, CurrentTime: now}); err != nil {
			t.Errorf("at %s, %s: %v", now, n, err)
		}
	}
}

// TestDecodeKitRefuses: a Secret that is not a whole kit is refused with the key at fault.
func TestDecodeKitRefuses(t *testing.T) {
	k, _, _, err := plan(time.Now(), nil, certSpec{names: []string{"a.b.svc"}, caLifetime: time.Hour, certLifetime: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	good, err := k.encode()
	if err != nil {
		t.Fatal(err)
	}
	other, _, _, _ := plan(time.Now(), nil, certSpec{names: []string{"a.b.svc"}, caLifetime: time.Hour, certLifetime: time.Minute}, nil)
	otherData, _ := other.encode()
	for _, c := range []struct {
		name, key string
		value     []byte
	}{
		{"no bundle", keyCABundle, nil},
		{"no CA key", keyCAKey, nil},
		{"another CA's key", keyCAKey, otherData[keyCAKey]},
		{"no serving key", keyKey, nil},
		{"a key of another certificate", keyKey, otherData[keyKey]},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range good {
				data[k] = v
			}
			data[c.key] = c.value
			if _, err := decodeKit(data); err == nil {
				t.Errorf("decoded with %s %q", c.key, c.value)
			}
		})
	}
}
