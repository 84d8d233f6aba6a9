package detect

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/sidecar"
)

// ManifestContainer is a container as a manifest (a Pod, or a Job's pod template) shows it:
// what ManifestSidecar reads to tell whether it is a known sidecar.
type ManifestContainer struct {
	Name  string
	Image string
	// Command and Args are the container's own; the image's ENTRYPOINT is not known here.
	Command []string
	Args    []string
	// Native marks an init container with restartPolicy: Always (a Kubernetes native sidecar).
	Native bool
	// StartupProbe says that the container has a startupProbe.
	StartupProbe bool
}

// ManifestSidecar recognises a known sidecar among a manifest's containers, as detection does
// in a Pod object: by the first row of Signatures whose name or image the container matches,
// refined by what the container itself says (native or not, a startup probe, the Cloud SQL Auth
// Proxy's --health-check, --http-port, --quitquitquit and --admin-port). It also returns the
// sidecar written as a --sidecar value (see Spec), for `kubectl sidesync inject` to record on the
// pod template.
func ManifestSidecar(mc ManifestContainer) (f Found, spec string, ok bool) {
	c := container{Name: mc.Name, Image: mc.Image, Command: mc.Command, Args: mc.Args, native: mc.Native}
	if mc.StartupProbe {
		probe := json.RawMessage("{}")
		c.StartupProbe = &probe
	}
	s, ok := containerSignature(c)
	if !ok {
		return Found{}, "", false
	}
	f = Found{Profile: s.Profile, Why: "container " + mc.Name}
	f.Sidecar, _ = sidecar.Profile(s.Profile)
	applyContainer(&f, s, c)
	return f, Spec(s.Profile, f.Sidecar), true
}

// Spec writes sc, a sidecar of the profile called profile, as a value of sidesync's --sidecar
// flag (and of SIDESYNC_SIDECARS): the profile's name, then only the settings in which sc
// differs from the profile's defaults, in a fixed order: "istio",
// "cloudsql:ready-port=9190,quit-port=9191", "cloudsql:ready=none",
// "linkerd:native=true,startup-probe=true". Several such values joined by commas are one value
// again, since a comma segment that starts with KEY= continues the sidecar before it.
func Spec(profile string, sc sidecar.Sidecar) string {
	def, _ := sidecar.Profile(profile)
	var settings []string
	settings = append(settings, endpointSetting("ready", checkURL(def.Ready), checkURL(sc.Ready))...)
	settings = append(settings, endpointSetting("quit", callURL(def.Quit), callURL(sc.Quit))...)
	if sc.Native {
		settings = append(settings, "native=true")
	}
	if sc.StartupProbe {
		settings = append(settings, "startup-probe=true")
	}
	if len(settings) == 0 {
		return profile
	}
	return profile + ":" + strings.Join(settings, ",")
}

// endpointSetting is the setting that turns the default URL def into got: none, a port, or the
// whole URL.
func endpointSetting(key, def, got string) []string {
	switch {
	case got == def:
		return nil
	case got == "":
		return []string{key + "=none"}
	case def != "" && samePlaceButPort(def, got):
		return []string{key + "-port=" + portOf(got)}
	}
	return []string{key + "=" + got}
}

// samePlaceButPort reports whether the URLs a and b differ in their port alone.
func samePlaceButPort(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil || ub.Port() == "" {
		return false
	}
	ua.Host, ub.Host = ua.Hostname(), ub.Hostname()
	return ua.String() == ub.String()
}

func portOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if _, err := strconv.Atoi(u.Port()); err != nil {
		return ""
	}
	return u.Port()
}

func checkURL(c *sidecar.Check) string {
	if c == nil {
		return ""
	}
	return c.URL
}

func callURL(c *sidecar.Call) string {
	if c == nil {
		return ""
	}
	return c.URL
}
