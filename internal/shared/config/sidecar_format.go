package config

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/sidecar"
)

// FormatSidecar writes sc, a sidecar of the profile called profile, as a value of the --sidecar
// flag (and of SIDESYNC_SIDECARS and the pod annotations), which ParseSidecars reads back: the profile's name, then only the settings in which sc
// differs from the profile's defaults, in a fixed order: "istio",
// "cloudsql:ready-port=9190,quit-port=9191", "cloudsql:ready=none",
// "linkerd:native=true,startup-probe=true". Several such values joined by commas are one value
// again, since a comma segment that starts with KEY= continues the sidecar before it.
func FormatSidecar(profile string, sc sidecar.Sidecar) string {
	def, _ := catalog.Profile(profile)
	var settings []string
	settings = append(settings, endpointSetting("ready", checkURL(def.Ready), checkURL(sc.Ready))...)
	settings = append(settings, endpointSetting("quit", callURL(def.Quit), callURL(sc.Quit))...)
	if sc.Native {
		settings = append(settings, nativeSetting)
	}
	if sc.StartupProbe {
		settings = append(settings, startupProbeSetting)
	}
	if len(settings) == 0 {
		return profile
	}
	return profile + ":" + strings.Join(settings, ",")
}

// The settings FormatSidecar and FormatSidecarCEL write besides URLs: "native=true",
// "ready=none", "quit-port=9191".
const (
	nativeSetting       = "native=true"
	startupProbeSetting = "startup-probe=true"
	noneSuffix          = "=none"
	portSuffix          = "-port="
)

// FormatSidecarCEL is FormatSidecar in CEL, for an admission policy: the value that FormatSidecar
// writes for a sidecar of the profile called profile in a container of the pod, whose profile sc
// renders (catalog.Entry.ProfileCEL: what catalog.Sort makes of the container's settings). Sort
// only moves an endpoint's port or drops it, so of endpointSetting's settings it writes none, a
// port or nothing, never a whole URL. Written with strings and strconv only, and never called in
// the pod binary, which does not link it.
func FormatSidecarCEL(profile string, sc catalog.SidecarCEL) string {
	var settings []string
	if sc.Ready != nil {
		settings = append(settings, endpointSettingCEL("ready", *sc.Ready))
	}
	if sc.Quit != nil {
		settings = append(settings, endpointSettingCEL("quit", *sc.Quit))
	}
	settings = append(settings,
		"("+sc.Native+" ? "+strconv.Quote(nativeSetting)+` : "")`,
		"("+sc.StartupProbe+" ? "+strconv.Quote(startupProbeSetting)+` : "")`)
	return "[[" + strings.Join(settings, ", ") + `].filter(x, x != "")].map(ss, ` + strconv.Quote(profile) +
		` + (size(ss) == 0 ? "" : ":" + ss.join(",")))[0]`
}

// endpointSettingCEL is endpointSetting in CEL for an endpoint of a profile that catalog.Sort
// read: none when it is dropped, its port when another, else nothing.
func endpointSettingCEL(key string, ep catalog.EndpointCEL) string {
	return "(" + ep.Dropped + " ? " + strconv.Quote(key+noneSuffix) + " : [" + ep.Port + "].map(pp, (pp != 0 && pp != " +
		strconv.Itoa(ep.Default) + ") ? " + strconv.Quote(key+portSuffix) + ` + string(pp) : "")[0])`
}

// endpointSetting is the setting that turns the default URL def into got: none, a port, or the
// whole URL.
func endpointSetting(key, def, got string) []string {
	switch {
	case got == def:
		return nil
	case got == "":
		return []string{key + noneSuffix}
	case def != "" && samePlaceButPort(def, got):
		return []string{key + portSuffix + portOf(got)}
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
