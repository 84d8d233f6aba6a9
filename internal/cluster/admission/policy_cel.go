package admission

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
)

// This file holds the policies' CEL helpers, and assembles what contract.FoundAnnotation says of
// each sidecar: config.FormatSidecarCEL of what the catalog renders of the profile
// (catalog.Entry.ProfileCEL). The catalog's predicates (which containers are sidecars, which an
// orchestrator stops, which are apps) are rendered in CEL by the catalog itself, beside their Go
// (catalog.SortCEL), and the --sidecar syntax by config beside FormatSidecar; nothing here knows
// a sidecar, a rule of the catalog or a setting of --sidecar.

// policyPod is how the catalog's CEL reads the pod in the policies: through their variables ann
// and lbl (policySpec), the pod's annotations and labels or {}.
var policyPod = catalog.CELPod{Annotations: "variables.ann", Labels: "variables.lbl"}

// q and celList write CEL constants: the catalog's, the one way every rendering writes them.
var (
	q       = catalog.CELString
	celList = catalog.CELList
)

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
// it), its entry of contract.FoundAnnotation, or "" when it has none: config.FormatSidecarCEL of
// the profile that catalog.Sort makes of its settings (catalog.Entry.ProfileCEL). native says c
// is a native sidecar.
func foundCEL(k *catalog.SortCEL, c, ent string, native bool) string {
	return k.SidecarRows(ent, func(e *catalog.Entry) string {
		return config.FormatSidecarCEL(e.Name, e.ProfileCEL(policyPod, c, native))
	}, `""`)
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
