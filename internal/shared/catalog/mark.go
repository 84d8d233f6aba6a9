package catalog

import (
	"fmt"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// On reports whether the pod's annotations or labels carry the mark.
func (m Mark) On(ann, labels map[string]string) bool {
	from := ann
	if m.Label {
		from = labels
	}
	v, ok := from[m.Key]
	return ok && (m.Value == "" || v == m.Value)
}

// CEL is On in CEL, over the pod's annotations and labels as p names them.
func (m Mark) CEL(p CELPod) string {
	from := p.Annotations
	if m.Label {
		from = p.Labels
	}
	if m.Value == "" {
		return fmt.Sprintf("(%s in %s)", CELString(m.Key), from)
	}
	return fmt.Sprintf("(%s in %s && %s[%s] == %s)", CELString(m.Key), from, from, CELString(m.Key), CELString(m.Value))
}

// anyOn reports whether the pod carries any of marks.
func anyOn(marks []Mark, v *manifest.PodView) bool {
	for _, m := range marks {
		if m.On(v.Annotations, v.Labels) {
			return true
		}
	}
	return false
}

// anyOnCEL is anyOn in CEL.
func anyOnCEL(marks []Mark, p CELPod) string {
	var c []string
	for _, m := range marks {
		c = append(c, m.CEL(p))
	}
	return celOr(c)
}

// String is the mark as messages show it: `annotation linkerd.io/inject: "enabled"`, `label
// osm-proxy-uuid`.
func (m Mark) String() string {
	what := "annotation "
	if m.Label {
		what = "label "
	}
	if m.Value == "" {
		return what + m.Key
	}
	return what + m.YAML()
}

// YAML is the mark as a line of YAML, its value quoted: `sidecar.istio.io/nativeSidecar: "true"`.
func (m Mark) YAML() string { return m.Key + ": " + quote(m.Value) }

// Matches reports whether container c of pod v matches m.
func (m Match) Matches(v *manifest.PodView, c *manifest.Container) bool {
	switch {
	case m.When != nil && !m.When.On(v.Annotations, v.Labels):
		return false
	case m.Name != "" && m.Name != c.Name:
		return false
	case m.NamePrefix != "" && (len(c.Name) <= len(m.NamePrefix) || c.Name[:len(m.NamePrefix)] != m.NamePrefix):
		return false
	}
	return m.Image == "" || containsFold(c.Image, m.Image)
}

// CEL is Matches in CEL, for the container that the CEL expression c names in the pod p names.
// The image is compared in ASCII lower case: CEL has no Unicode case folding, and image
// references are ASCII (the API server refuses others).
func (m Match) CEL(p CELPod, c string) string {
	var conds []string
	if m.When != nil {
		conds = append(conds, m.When.CEL(p))
	}
	if m.Name != "" {
		conds = append(conds, fmt.Sprintf("%s.name == %s", c, CELString(m.Name)))
	}
	if m.NamePrefix != "" {
		conds = append(conds, fmt.Sprintf("(%s.name.startsWith(%s) && size(%s.name) > %d)", c, CELString(m.NamePrefix), c, len([]rune(m.NamePrefix))))
	}
	if m.Image != "" {
		conds = append(conds, fmt.Sprintf("(has(%s.image) && %s.image.lowerAscii().contains(%s))", c, c, CELString(strings.ToLower(m.Image))))
	}
	return celAnd(conds)
}

// containsFold reports whether s contains sub, ignoring case.
func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
