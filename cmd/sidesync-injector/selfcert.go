package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/sidesync/sidesync/internal/cluster/admission"
)

// certOptions are the flags of the self-managed certificates (--cert-secret).
type certOptions struct {
	secret                   string // the Secret, in the injector's namespace
	service, clusterDomain   string // the Service the API server calls, for the DNS names
	mutating, validating     string // the webhook configurations whose caBundle is written
	caLifetime, certLifetime time.Duration
}

// managedByLabel marks the Secret the injector made; it never overwrites a Secret without it.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "sidesync-injector"
	fieldManager   = "sidesync-injector"
)

// dnsNames are the serving certificate's names, those of the chart's cert-manager Certificate.
func (o certOptions) dnsNames(namespace string) []string {
	return admission.ServingDNSNames(o.service, namespace, o.clusterDomain)
}

// selfCerts keeps the CA and the serving certificate in a Secret of the injector's namespace,
// renews them before they expire, writes the CA bundle into the two webhook configurations
// (again whenever something changes it there), and serves the certificate from memory. Several
// replicas share the Secret: each write carries the resourceVersion it was decided from, and a
// replica that loses reads the winner's and decides again, so they never fight.
type selfCerts struct {
	o         certOptions
	namespace string
	spec      certSpec
	client    kubernetes.Interface
	log       *slog.Logger
	now       func() time.Time

	secrets cache.SharedIndexInformer
	hooks   []*hookConfig
	kick    chan struct{}
	expiry  *prometheus.GaugeVec

	cert    atomic.Pointer[tls.Certificate]
	written atomic.Bool // the bundle has been in both configurations
}

// newSelfCerts watches the Secret and the two configurations (each filtered by its name).
func newSelfCerts(client kubernetes.Interface, namespace string, o certOptions, log *slog.Logger, reg prometheus.Registerer) *selfCerts {
	byName := func(name string) func(*metav1.ListOptions) {
		return func(lo *metav1.ListOptions) { lo.FieldSelector = "metadata.name=" + name }
	}
	s := &selfCerts{o: o, namespace: namespace, client: client, log: log, now: time.Now, kick: make(chan struct{}, 1),
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sidesync_injector_certificate_expiry_timestamp_seconds",
			Help: "When the served certificate (certificate=serving) and the newest CA (certificate=ca) expire, in seconds since 1970; the injector renews each with a third of its lifetime left."},
			[]string{"certificate"}),
		spec:    certSpec{names: o.dnsNames(namespace), caLifetime: o.caLifetime, certLifetime: o.certLifetime},
		secrets: coreinformers.NewFilteredSecretInformer(client, namespace, 0, cache.Indexers{}, byName(o.secret)),
	}
	reg.MustRegister(s.expiry)
	popts := metav1.PatchOptions{FieldManager: fieldManager}
	s.hooks = []*hookConfig{
		{kind: "MutatingWebhookConfiguration", name: o.mutating,
			informer: admissioninformers.NewFilteredMutatingWebhookConfigurationInformer(client, 0, cache.Indexers{}, byName(o.mutating)),
			patch: func(ctx context.Context, data []byte) error {
				_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, o.mutating, types.JSONPatchType, data, popts)
				return err
			}},
		{kind: "ValidatingWebhookConfiguration", name: o.validating,
			informer: admissioninformers.NewFilteredValidatingWebhookConfigurationInformer(client, 0, cache.Indexers{}, byName(o.validating)),
			patch: func(ctx context.Context, data []byte) error {
				_, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, o.validating, types.JSONPatchType, data, popts)
				return err
			}},
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.poke() },
		UpdateFunc: func(any, any) { s.poke() },
		DeleteFunc: func(any) { s.poke() },
	}
	for _, inf := range s.informers() {
		inf.AddEventHandler(handler)
	}
	return s
}

func (s *selfCerts) informers() []cache.SharedIndexInformer {
	out := []cache.SharedIndexInformer{s.secrets}
	for _, h := range s.hooks {
		out = append(out, h.informer)
	}
	return out
}

func (s *selfCerts) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// ready reports whether a certificate is served and the bundle has been written.
func (s *selfCerts) ready() bool { return s.cert.Load() != nil && s.written.Load() }

// tlsConfig is TLS 1.2 or newer with the certificate in memory, switched as soon as the Secret
// changes.
func (s *selfCerts) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := s.cert.Load(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate yet")
		},
	}
}

// run keeps the certificates until ctx ends: at every change of the three objects, and when the
// next renewal is due. A failure is tried again after 1 s, doubling up to 30 s.
func (s *selfCerts) run(ctx context.Context) {
	for _, inf := range s.informers() {
		go inf.Run(ctx.Done())
	}
	synced := make([]cache.InformerSynced, 0, 3)
	for _, inf := range s.informers() {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	retry := time.Second
	for {
		next, err := s.reconcile(ctx)
		wait := next.Sub(s.now())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("certificates: trying again", "secret", s.namespace+"/"+s.o.secret, "err", err, "in", retry)
			wait, retry = retry, min(2*retry, 30*time.Second)
		} else {
			retry = time.Second
		}
		timer := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// reconcile brings the Secret, the served certificate and the configurations' bundles to what
// plan says, and returns when to look again.
func (s *selfCerts) reconcile(ctx context.Context) (time.Time, error) {
	sec, err := s.cachedSecret()
	if err != nil {
		return time.Time{}, err
	}
	for attempt := 0; ; attempt++ {
		if sec == nil {
			if sec, err = s.create(ctx); err != nil {
				return time.Time{}, err
			}
		}
		if sec.Labels[managedByLabel] != managedBy {
			return time.Time{}, fmt.Errorf("the Secret %s/%s exists and is %w (no label %s=%s): delete it, or give another --cert-secret",
				sec.Namespace, sec.Name, errNotOurs, managedByLabel, managedBy)
		}
		kit, err := decodeKit(sec.Data)
		if err != nil {
			s.log.Warn("the certificate Secret cannot be read: making a new CA and certificate", "secret", sec.Name, "err", err)
			kit = nil
		}
		out, changed, next, err := plan(s.now(), kit, s.spec, s.trusted)
		if err != nil {
			return time.Time{}, err
		}
		if changed {
			upd, err := s.update(ctx, sec, out)
			if apierrors.IsConflict(err) && attempt < 5 {
				// Another replica wrote first: decide again from what it wrote.
				if sec, err = s.freshSecret(ctx); err != nil {
					return time.Time{}, err
				}
				continue
			}
			if err != nil {
				return time.Time{}, err
			}
			logChange(s.log, kit, out)
			sec = upd
		}
		s.serve(out)
		return next, s.writeBundles(ctx, sec)
	}
}

func (s *selfCerts) cachedSecret() (*corev1.Secret, error) {
	obj, ok, err := s.secrets.GetStore().GetByKey(s.namespace + "/" + s.o.secret)
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

// freshSecret reads the Secret from the API server (nil when it does not exist).
func (s *selfCerts) freshSecret(ctx context.Context) (*corev1.Secret, error) {
	sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, s.o.secret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sec, err
}

// create makes the Secret with a new CA and certificate; when another replica made it first,
// it returns theirs.
func (s *selfCerts) create(ctx context.Context) (*corev1.Secret, error) {
	kit, _, _, err := plan(s.now(), nil, s.spec, s.trusted)
	if err != nil {
		return nil, err
	}
	data, err := kit.encode()
	if err != nil {
		return nil, err
	}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.o.secret, Namespace: s.namespace, Labels: map[string]string{managedByLabel: managedBy}},
		Type:       corev1.SecretTypeTLS, Data: data,
	}
	made, err := s.client.CoreV1().Secrets(s.namespace).Create(ctx, sec, metav1.CreateOptions{FieldManager: fieldManager})
	if apierrors.IsAlreadyExists(err) {
		theirs, err := s.freshSecret(ctx)
		if err == nil && theirs == nil {
			err = errors.New("the Secret was created by another and deleted since")
		}
		return theirs, err
	}
	if err != nil {
		return nil, fmt.Errorf("creating the Secret %s/%s: %w", s.namespace, s.o.secret, err)
	}
	s.log.Info("certificates made", "secret", s.namespace+"/"+s.o.secret, "ca_expires", kit.cas[0].NotAfter, "cert_expires", kit.leaf.NotAfter)
	return made, nil
}

// update writes kit into the Secret as read (its resourceVersion: a Conflict when another
// replica wrote since).
func (s *selfCerts) update(ctx context.Context, sec *corev1.Secret, kit *certKit) (*corev1.Secret, error) {
	data, err := kit.encode()
	if err != nil {
		return nil, err
	}
	upd := sec.DeepCopy()
	upd.Data, upd.Type = data, corev1.SecretTypeTLS
	return s.client.CoreV1().Secrets(s.namespace).Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManager})
}

func logChange(log *slog.Logger, before, after *certKit) {
	if before == nil || !before.cas[0].Equal(after.cas[0]) {
		log.Info("CA renewed", "expires", after.cas[0].NotAfter, "bundle", len(after.cas))
	}
	if before == nil || !before.leaf.Equal(after.leaf) {
		log.Info("serving certificate renewed", "serial", after.leaf.SerialNumber.String(), "expires", after.leaf.NotAfter)
	}
}

// serve switches the served certificate to kit's if it is another.
func (s *selfCerts) serve(kit *certKit) {
	if c := s.cert.Load(); c != nil && c.Leaf.Equal(kit.leaf) {
		return
	}
	pair := kit.pair
	s.cert.Store(&pair)
	s.expiry.WithLabelValues("serving").Set(float64(kit.leaf.NotAfter.Unix()))
	s.expiry.WithLabelValues("ca").Set(float64(kit.cas[0].NotAfter.Unix()))
}
