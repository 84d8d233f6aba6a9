package admission

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
)

// This file holds the policies' CEL helpers, and writes what contract.FoundAnnotation says of each
// sidecar as config.FormatSidecar does, from what the catalog renders of the profile
// (catalog.Entry.ReadyCEL, QuitCEL). The catalog's predicates (which containers are sidecars,
// which an orchestrator stops, which are apps) are rendered in CEL by the catalog itself,
// beside their Go (catalog.SortCEL); nothing here knows a sidecar or a rule of the catalog.

// policyPod is how the catalog's CEL reads the pod in the policies: through their variables ann
// and lbl (policySpec), the pod's annotations and labels or {}.
var policyPod = catalog.CELPod{Annotations: "variables.ann", Labels: "variables.lbl"}

// q is s as a CEL string literal (Go's double-quoted escapes are CEL's).
func q(s string) string { return strconv.Quote(s) }

// celList is words as a CEL list of strings.
func celList(words []string) string {
	var qs []string
	for _, w := range words {
		qs = append(qs, q(w))
	}
	return "[" + strings.Join(qs, ", ") + "]"
}

// or and and join CEL conditions; none is false for or and true for and.
func or(conds []string) string {
	if len(conds) == 0 {
		return "false"
	}
	return "(" + strings.Join(conds, " || ") + ")"
}

func and(conds []string) string {
	if len(conds) == 0 {
		return "true"
	}
	return "(" + strings.Join(conds, " && ") + ")"
}

// foundCEL is, for the sidecar container c whose row index is ent (as catalog.SortCEL.Claim gives
// it), its entry of contract.FoundAnnotation, or "" when it has none: config.FormatSidecar of the
// profile that catalog.Sort makes of its settings, in CEL. native says c is a native sidecar.
func foundCEL(k *catalog.SortCEL, c, ent string, native bool) string {
	return k.SidecarRows(ent, func(e *catalog.Entry) string { return specCEL(e, c, native) }, `""`)
}

// specCEL is FormatSidecar(e.Name, profile) for container c: the endpoints whose settings differ
// from the row's, then native and startup-probe, in FormatSidecar's order.
func specCEL(e *catalog.Entry, c string, native bool) string {
	var settings []string
	if ep, ok := e.ReadyCEL(policyPod, c); ok {
		settings = append(settings, endpointCEL("ready", ep))
	}
	if ep, ok := e.QuitCEL(policyPod, c); ok {
		settings = append(settings, endpointCEL("quit", ep))
	}
	settings = append(settings,
		fmt.Sprintf("(%t ? %s : \"\")", native, q("native=true")),
		fmt.Sprintf("((%t && has(%s.startupProbe)) ? %s : \"\")", native, c, q("startup-probe=true")))
	return fmt.Sprintf("[[%s].filter(x, x != \"\")].map(ss, %s + (size(ss) == 0 ? \"\" : \":\" + ss.join(\",\")))[0]",
		strings.Join(settings, ", "), q(e.Name))
}

// endpointCEL is the setting config's endpointSetting writes: none when the endpoint is off, its
// port when another, else nothing.
func endpointCEL(key string, ep catalog.EndpointCEL) string {
	return fmt.Sprintf("(%s ? %s : [%s].map(pp, (pp != 0 && pp != %d) ? %s + string(pp) : \"\")[0])", ep.Dropped, q(key+"=none"), ep.Port, ep.Default, q(key+"-port="))
}

// sortedKeys are m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// valueCEL writes a decoded JSON value as a CEL value of the pod's type typ
// ("Object.spec.initContainers"): objects as typed constructions, which MutatingAdmissionPolicy's
// JSON Patch values need; maps of the API (resources' requests and limits) as CEL maps.
func valueCEL(v any, typ string) (string, error) {
	switch v := v.(type) {
	case string:
		return q(v), nil
	case bool:
		return strconv.FormatBool(v), nil
	case []any:
		var els []string
		for _, e := range v {
			s, err := valueCEL(e, typ)
			if err != nil {
				return "", err
			}
			els = append(els, s)
		}
		return "[" + strings.Join(els, ", ") + "]", nil
	case map[string]any:
		last := typ[strings.LastIndex(typ, ".")+1:]
		isMap := slices.Contains([]string{"requests", "limits"}, last)
		var fields []string
		for _, k := range sortedKeys(v) {
			s, err := valueCEL(v[k], typ+"."+k)
			if err != nil {
				return "", err
			}
			if isMap {
				fields = append(fields, q(k)+": "+s)
			} else {
				fields = append(fields, k+": "+s)
			}
		}
		if isMap {
			return "{" + strings.Join(fields, ", ") + "}", nil
		}
		return typ + "{" + strings.Join(fields, ", ") + "}", nil
	}
	return "", fmt.Errorf("%s: a %T, which the policy cannot write", typ, v)
}
