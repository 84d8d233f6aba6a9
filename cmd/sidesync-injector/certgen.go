package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// The keys of the self-managed Secret (--cert-secret). tls.crt and tls.key are what a Secret of
// type kubernetes.io/tls holds; ca.crt is the bundle the webhook configurations get (the newest
// CA first, then the older ones until they expire), ca.key the newest CA's key.
const (
	keyCert     = "tls.crt"
	keyKey      = "tls.key"
	keyCABundle = "ca.crt"
	keyCAKey    = "ca.key"
)

// certKit is what the Secret holds, parsed.
type certKit struct {
	cas   []*x509.Certificate // newest first
	caKey *ecdsa.PrivateKey   // cas[0]'s
	leaf  *x509.Certificate
	pair  tls.Certificate // the serving key pair, leaf and key
}

// certSpec is what the certificates must be: the serving certificate's DNS names and the
// lifetimes of both.
type certSpec struct {
	names                    []string
	caLifetime, certLifetime time.Duration
}

// renewAt is when a certificate is renewed: once less than a third of its lifetime is left (as
// cert-manager's default renewBefore, and kubelet's client certificates rotate between 70 and
// 90 % of theirs).
func renewAt(c *x509.Certificate) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotAfter.Add(-life / 3)
}

// backdate is how far before now a new certificate starts, for clocks a little behind ours (an
// API server's): a tenth of its lifetime, at most 5 minutes.
func backdate(lifetime time.Duration) time.Duration { return min(lifetime/10, 5*time.Minute) }

func serial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// newCA makes a self-signed CA valid from now for lifetime.
func newCA(now time.Time, lifetime time.Duration, name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := serial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: name + " CA " + now.UTC().Format(time.RFC3339)},
		NotBefore: now.Add(-backdate(lifetime)), NotAfter: now.Add(lifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// newLeaf makes a serving certificate for names signed by ca, valid from now for lifetime but
// never beyond the CA.
func newLeaf(now time.Time, lifetime time.Duration, names []string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (tls.Certificate, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	sn, err := serial()
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-backdate(lifetime)), NotAfter: now.Add(lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf, nil
}

// encode is the kit as the Secret's data.
func (k *certKit) encode() (map[string][]byte, error) {
	var bundle []byte
	for _, ca := range k.cas {
		bundle = append(bundle, pemCert(ca.Raw)...)
	}
	caKey, err := x509.MarshalPKCS8PrivateKey(k.caKey)
	if err != nil {
		return nil, err
	}
	key, err := x509.MarshalPKCS8PrivateKey(k.pair.PrivateKey)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		keyCert:     pemCert(k.leaf.Raw),
		keyKey:      pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
		keyCABundle: bundle,
		keyCAKey:    pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKey}),
	}, nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// decodeKit parses the Secret's data; an error says which key is wrong.
func decodeKit(data map[string][]byte) (*certKit, error) {
	k := &certKit{}
	rest := data[keyCABundle]
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		ca, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyCABundle, err)
		}
		k.cas = append(k.cas, ca)
	}
	if len(k.cas) == 0 {
		return nil, fmt.Errorf("%s: no certificate", keyCABundle)
	}
	b, _ := pem.Decode(data[keyCAKey])
	if b == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyCAKey)
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyCAKey, err)
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok || !ec.PublicKey.Equal(k.cas[0].PublicKey) {
		return nil, fmt.Errorf("%s: not the key of the first CA in %s", keyCAKey, keyCABundle)
	}
	k.caKey = ec
	if k.pair, err = tls.X509KeyPair(data[keyCert], data[keyKey]); err != nil {
		return nil, fmt.Errorf("%s, %s: %w", keyCert, keyKey, err)
	}
	k.leaf = k.pair.Leaf
	return k, nil
}

// issuer is the CA of the kit that signed its serving certificate, or nil.
func (k *certKit) issuer() *x509.Certificate {
	for _, ca := range k.cas {
		if k.leaf.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}

// plan is what the Secret must hold at now: the same kit (changed false), or a renewed one.
// trusted says whether the API server trusts a CA (every webhook's caBundle holds it): after a
// CA is renewed, the serving certificate moves to the new CA only once it is trusted, unless
// the serving certificate must be renewed anyway (due, expired, for other names). The kit is
// never changed in place. next is when plan must be asked again, if nothing changes before.
func plan(now time.Time, k *certKit, spec certSpec, trusted func(*x509.Certificate) bool) (out *certKit, changed bool, next time.Time, err error) {
	out = &certKit{}
	if k != nil {
		*out = *k
		out.cas = slices.Clone(k.cas)
	}
	if k == nil || !now.Before(renewAt(out.cas[0])) {
		ca, key, err := newCA(now, spec.caLifetime, spec.names[0])
		if err != nil {
			return nil, false, time.Time{}, err
		}
		out.cas, out.caKey, changed = append([]*x509.Certificate{ca}, out.cas...), key, true
	}
	// Older CAs stay in the bundle until they expire.
	kept := out.cas[:1]
	for _, ca := range out.cas[1:] {
		if now.Before(ca.NotAfter) {
			kept = append(kept, ca)
		} else {
			changed = true
		}
	}
	out.cas = kept

	reissue := out.leaf == nil || !now.Before(renewAt(out.leaf)) || !slices.Equal(out.leaf.DNSNames, spec.names)
	if !reissue {
		iss := out.issuer()
		// Signed by a CA no longer in the bundle, or by an older one that the API server has
		// stopped trusting (that CA's expiry drops it), or an older one when the newest is
		// trusted.
		reissue = iss == nil || (!iss.Equal(out.cas[0]) && trusted(out.cas[0]))
	}
	if reissue {
		pair, leaf, err := newLeaf(now, spec.certLifetime, spec.names, out.cas[0], out.caKey)
		if err != nil {
			return nil, false, time.Time{}, err
		}
		out.pair, out.leaf, changed = pair, leaf, true
	}
	next = renewAt(out.leaf)
	next = earliest(next, renewAt(out.cas[0]))
	for _, ca := range out.cas[1:] {
		next = earliest(next, ca.NotAfter)
	}
	return out, changed, next, nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// holdsAll reports whether bundle (PEM) holds every certificate of cas.
func holdsAll(bundle []byte, cas ...*x509.Certificate) bool {
	for _, ca := range cas {
		if !bytes.Contains(bundle, pemCert(ca.Raw)) {
			return false
		}
	}
	return true
}

var errNotOurs = errors.New("not made by the injector")
