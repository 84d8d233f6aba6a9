// Command sidesync-injector is sidesync's admission webhook: it wraps the app containers of the
// pods created in the namespaces (or the pods) that opt in, with the same mutation as
// `kubectl sidesync inject` (internal/cluster/inject, answered as a JSON Patch), and warns at the
// creation of Jobs and CronJobs that will hang on a sidecar. See docs/INSTALL.md.
//
// It is its own binary, on net/http: the webhook needs a TLS server that reloads its
// certificate, two handlers, probes and metrics, which the standard library and
// client_golang give without a controller manager (ARCHITECTURE.md says why not
// controller-runtime's webhook server).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sidesync/sidesync/internal/cluster/admission"
	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], buildinfo.Current(), os.Stderr, nil))
}

// config is the command line.
type config struct {
	listen, probeListen string
	certFile, keyFile   string
	certs               certOptions // with --cert-secret: the self-managed certificates
	namespace           string
	kubeconfig          string
	inject              inject.Options
	native              inject.NativeMode // inject.Native per pod: as given, or (auto) from the nodes
	resolve             bool
	registry            registryOptions // with resolve
	maxInFlight         int
	logFormat           string
	drainDelay          time.Duration
	shutdownTimeout     time.Duration
}

var usage = fmt.Sprintf(`sidesync-injector: sidesync's admission webhook.

Usage: sidesync-injector --tls-cert-file FILE --tls-key-file FILE --namespace NS [flags]
       sidesync-injector --cert-secret NAME --cert-service NAME --namespace NS [flags]

With --cert-secret the injector manages its certificates itself: a CA and a serving certificate
for the Service's DNS names in that Secret of --namespace (made when absent, renewed when a
third of their lifetime is left), the CA bundle written into the two webhook configurations
(and written again when something changes it there), the certificate served from memory.

With --delivery image-volume it reads the API server's version and dry-run creates a wrapped
pod in --namespace before it serves: below Kubernetes %[1]s, or when the stored pod has lost its
image volume, it exits %[2]d and never turns ready.

Exit codes: 0 stopped, 2 bad flags, %[2]d the cluster lacks what the flags need, 1 any other failure.

Flags:
`, kubeversion.ImageVolume.Since, exitRefused)

// parse reads the command line; its errors name the flag.
func parse(args []string, build buildinfo.Info, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("sidesync-injector", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.listen, "listen", ":8443", "HTTPS address of the webhooks ("+admission.MutatePath+", "+admission.WarnPath+")")
	fs.StringVar(&c.probeListen, "probe-listen", ":8080", "HTTP address of "+admission.HealthzPath+", "+admission.ReadyzPath+" and "+admission.MetricsPath)
	fs.StringVar(&c.certFile, "tls-cert-file", "", "PEM certificate chain (reloaded when the file changes)")
	fs.StringVar(&c.keyFile, "tls-key-file", "", "PEM private key (reloaded with the certificate)")
	fs.StringVar(&c.certs.secret, "cert-secret", "", "manage the certificates in this Secret of --namespace, instead of --tls-cert-file and --tls-key-file")
	fs.StringVar(&c.certs.service, "cert-service", "", "with --cert-secret: the Service the API server calls (the certificate is for SERVICE.NAMESPACE.svc)")
	fs.StringVar(&c.certs.clusterDomain, "cluster-domain", "cluster.local", "with --cert-secret: the cluster's DNS domain, for the certificate's names")
	fs.StringVar(&c.certs.mutating, "mutating-webhook-configuration", admission.MutatingConfigName, "with --cert-secret: the MutatingWebhookConfiguration whose caBundle the injector writes")
	fs.StringVar(&c.certs.validating, "validating-webhook-configuration", admission.ValidatingConfigName, "with --cert-secret: the ValidatingWebhookConfiguration whose caBundle the injector writes")
	fs.DurationVar(&c.certs.caLifetime, "ca-lifetime", 10*365*24*time.Hour, "with --cert-secret: the CA's lifetime (renewed with a third left, the old one trusted until it expires)")
	fs.DurationVar(&c.certs.certLifetime, "cert-lifetime", 365*24*time.Hour, "with --cert-secret: the serving certificate's lifetime (renewed with a third left)")
	fs.StringVar(&c.namespace, "namespace", "", "the injector's own namespace, never mutated (from the downward API)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: the pod's service account (in-cluster)")
	fs.StringVar(&c.inject.Image, "image", "", "the sidesync image put into pods (default: this release's)")
	delivery := fs.String("delivery", string(inject.InitCopy), "how the binary gets into pods: init-copy or image-volume")
	native := fs.String("native", string(inject.NativeAuto), "make the pods' sidecars native: always, never, or auto (where every node that can run the pod runs a kubelet with native sidecars; reads the Node objects)")
	fs.BoolVar(&c.resolve, "resolve", false, "read the ENTRYPOINT of command-less apps' images from their registries (needs the pods' pull secrets)")
	platforms := fs.String("platforms", "", "with --resolve: the platforms of multi-platform images read, comma-separated (linux/amd64,linux/arm64); empty: every linux platform")
	allow := fs.String("registry-allow", "", "with --resolve: address ranges (CIDR, comma-separated) of registries the injector may connect to although loopback, link-local, private or multicast")
	fs.IntVar(&c.maxInFlight, "max-in-flight", 16, "requests answered at once; more wait a quarter of their timeout (1 s at most), then are refused with 503")
	fs.StringVar(&c.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&c.drainDelay, "drain-delay", 5*time.Second, "on SIGTERM, how long /readyz fails before the server stops taking connections")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 20*time.Second, "on SIGTERM, how long requests in flight may take")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.inject.Delivery, c.inject.Version = inject.Delivery(*delivery), build.Version
	var errs []error
	var err error
	if c.native, err = inject.ParseNativeMode(*native); err != nil || *native == "" {
		errs = append(errs, fmt.Errorf("--native %q: not %s, %s or %s", *native, inject.NativeAuto, inject.NativeAlways, inject.NativeNever))
	}
	if c.registry.platforms, err = parsePlatforms(*platforms); err != nil {
		errs = append(errs, err)
	}
	if c.registry.allow, err = parseAllow(*allow); err != nil {
		errs = append(errs, err)
	}
	if !c.resolve && (*platforms != "" || *allow != "") {
		errs = append(errs, errors.New("--platforms and --registry-allow need --resolve"))
	}
	if image, err := build.ImageFlag(c.inject.Image); err != nil {
		errs = append(errs, err)
	} else {
		c.inject.Image = image
	}
	if err := c.inject.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.checkCerts()...)
	if c.namespace == "" {
		errs = append(errs, errors.New("--namespace is required: the injector's own namespace is never mutated"))
	}
	if c.maxInFlight < 1 {
		errs = append(errs, fmt.Errorf("--max-in-flight %d: at least 1", c.maxInFlight))
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q: text or json", c.logFormat))
	}
	if c.drainDelay < 0 || c.shutdownTimeout <= 0 {
		errs = append(errs, errors.New("--drain-delay and --shutdown-timeout: not negative, and a shutdown timeout"))
	}
	return c, errors.Join(errs...)
}

// checkCerts checks the certificate flags: the files, or --cert-secret and what goes with it.
func (c *config) checkCerts() []error {
	var errs []error
	if c.certs.secret == "" {
		if c.certFile == "" || c.keyFile == "" {
			errs = append(errs, errors.New("--tls-cert-file and --tls-key-file are required, or --cert-secret"))
		}
		return errs
	}
	if c.certFile != "" || c.keyFile != "" {
		errs = append(errs, errors.New("--cert-secret, or --tls-cert-file and --tls-key-file: not both"))
	}
	for _, f := range []struct{ flag, value string }{{"cert-secret", c.certs.secret}, {"cert-service", c.certs.service},
		{"cluster-domain", c.certs.clusterDomain}, {"mutating-webhook-configuration", c.certs.mutating},
		{"validating-webhook-configuration", c.certs.validating}} {
		if msgs := validation.IsDNS1123Subdomain(f.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s %q: %s", f.flag, f.value, strings.Join(msgs, "; ")))
		}
	}
	if c.certs.certLifetime <= 0 || c.certs.caLifetime < c.certs.certLifetime {
		errs = append(errs, fmt.Errorf("--cert-lifetime %s, --ca-lifetime %s: positive, and the CA's no shorter", c.certs.certLifetime, c.certs.caLifetime))
	}
	return errs
}

// ready is set by run once the server takes requests, and cleared when it drains.
type ready struct{ ok atomic.Bool }

// run runs the injector until ctx ends; it returns the exit code. started, when not nil, is
// told the two bound addresses (the tests listen on port 0).
func run(ctx context.Context, args []string, build buildinfo.Info, stderr io.Writer, started func(webhook, probes string)) int {
	c, err := parse(args, build, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sidesync-injector: %v\n", strings.ReplaceAll(err.Error(), "\n", "\nsidesync-injector: "))
		return 2
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if c.logFormat == "json" {
		h = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(h)
	var certs certSource
	if c.certs.secret == "" {
		if certs, err = newCertReloader(c.certFile, c.keyFile); err != nil {
			log.Error("certificate", "err", err)
			return 1
		}
	}
	kube, err := newKube(ctx, c.kubeconfig, log)
	if err != nil {
		log.Error("kubernetes client", "err", err)
		return 1
	}
	defer kube.stop()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if c.certs.secret != "" {
		self := newSelfCerts(kube.client, c.namespace, c.certs, log, reg)
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); self.run(cctx) }()
		defer func() { cancel(); <-done }()
		certs = self
	}
	if err := checkCluster(ctx, kube.client, c.namespace, c.inject); err != nil {
		log.Error("not starting: the cluster cannot take what the flags ask for", "err", err)
		if errors.Is(err, errRefused) {
			return exitRefused
		}
		return 1
	}

	metrics := admission.NewMetrics(reg)
	chooser := &admission.NativeChooser{Mode: c.native}
	nodesSettled := func() bool { return true }
	if c.native == inject.NativeAuto {
		nodes, err := newNodeCache(ctx, kube.client, log)
		if err != nil {
			log.Error("node cache", "err", err)
			return 1
		}
		chooser.Nodes, nodesSettled = nodes.nodes, nodes.settled
	}
	srv := &admission.Server{
		Mutator: &admission.Mutator{Inject: c.inject, Native: chooser, Namespace: c.namespace, Record: kube.record},
		Warner:  &admission.Warner{Inject: c.inject, Namespace: c.namespace, Namespaces: kube.namespace},
		Metrics: metrics, Log: log, Slots: make(chan struct{}, c.maxInFlight),
	}
	if c.resolve {
		srv.Mutator.Resolver = newResolver(podKeychain(kube), metrics, reg, log, build.Version, c.registry)
	}

	var rd ready
	probes := http.NewServeMux()
	probes.HandleFunc("GET "+admission.HealthzPath, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	probes.HandleFunc("GET "+admission.ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		if !rd.ok.Load() || !kube.synced() || !nodesSettled() || !certs.ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	probes.Handle("GET "+admission.MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	wl, err := net.Listen("tcp", c.listen)
	if err != nil {
		log.Error("listen", "addr", c.listen, "err", err)
		return 1
	}
	pl, err := net.Listen("tcp", c.probeListen)
	if err != nil {
		wl.Close()
		log.Error("listen", "addr", c.probeListen, "err", err)
		return 1
	}
	webhook := &http.Server{Handler: srv.Handler(), TLSConfig: certs.tlsConfig(), ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: 90 * time.Second, ErrorLog: slog.NewLogLogger(h, slog.LevelDebug)}
	probe := &http.Server{Handler: probes, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- webhook.ServeTLS(wl, "", "") }()
	go func() { errc <- probe.Serve(pl) }()
	rd.ok.Store(true)
	log.Info("serving", "version", build.Version, "webhook", wl.Addr().String(), "probes", pl.Addr().String(),
		"image", c.inject.Image, "delivery", string(c.inject.Delivery), "native", string(c.native), "resolve", c.resolve, "namespace", c.namespace)
	if started != nil {
		started(wl.Addr().String(), pl.Addr().String())
	}

	code := 0
	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("server stopped", "err", err)
		code = 1
	}
	// Drain: fail /readyz so that the Service's endpoints drop this pod, keep answering what
	// still comes for the drain delay, then stop taking connections and finish what is in
	// flight.
	rd.ok.Store(false)
	log.Info("draining", "delay", c.drainDelay)
	if code == 0 {
		select {
		case <-time.After(c.drainDelay):
		case err := <-errc:
			log.Error("server stopped", "err", err)
			code = 1
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	if err := webhook.Shutdown(sctx); err != nil {
		log.Warn("shutdown: requests still in flight", "err", err)
		code = 1
	}
	probe.Shutdown(sctx)
	log.Info("stopped")
	return code
}
