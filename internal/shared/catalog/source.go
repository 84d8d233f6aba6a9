package catalog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// value reads a source in the pod: the annotation, or the flag or variable of the sidecar's
// container.
func (s *Sidecar) value(v *manifest.PodView, src Source) (string, bool) {
	switch {
	case src.Annotation != "":
		val, ok := v.Annotations[src.Annotation]
		return val, ok
	case s.Container == nil:
		return "", false
	case src.Flag != "":
		return FlagValue(s.Container.Argv(), src.Flag, src.Value == "" && !src.port)
	}
	return s.Container.EnvValue(src.Env)
}

// hidden reports whether src is a variable of the sidecar's container set with valueFrom (a
// ConfigMap, a Secret, a field), whose value the manifest does not show.
func (s *Sidecar) hidden(src Source) bool {
	return src.Env != "" && s.Container != nil && s.Container.EnvFrom(src.Env)
}

// valueCEL is value and hidden in CEL, for the sidecar's container that the CEL expression c
// names: whether the pod sets the source (a bool), its value (a string, defined only where the
// source is set), and whether it is hidden (a bool).
func (src Source) valueCEL(p CELPod, c string) (set, val, hidden string) {
	switch {
	case src.Annotation != "":
		return fmt.Sprintf("(%s in %s)", CELString(src.Annotation), p.Annotations), fmt.Sprintf("%s[%s]", p.Annotations, CELString(src.Annotation)), "false"
	case src.Flag != "":
		set, val = FlagValueCEL(c, src.Flag, src.Value == "" && !src.port)
		return set, val, "false"
	}
	// manifest.Container's EnvValue and EnvFrom: the first entry of the name decides.
	first := fmt.Sprintf("%s.env.filter(e, e.name == %s)", c, CELString(src.Env))
	has := fmt.Sprintf("(has(%s.env) && size(%s) > 0)", c, first)
	val = fmt.Sprintf("(%s && has(%s[0].value) ? %s[0].value : \"\")", has, first, first)
	hidden = fmt.Sprintf("(%s && has(%s[0].valueFrom))", has, first)
	set = fmt.Sprintf("(%s && !has(%s[0].valueFrom) && %s != \"\")", has, first, val)
	return set, val, hidden
}

// on reports whether a source's value switches it on: its Value, or for a boolean flag or
// variable anything strconv.ParseBool reads as true (a flag given without a value is true).
func (src Source) on(val string) bool {
	if src.Value != "" {
		return val == src.Value
	}
	if src.Flag != "" && val == "" {
		return true
	}
	b, err := strconv.ParseBool(val)
	return err == nil && b
}

// onCEL is on in CEL, for the value that the CEL expression val gives.
func (src Source) onCEL(val string) string {
	if src.Value != "" {
		return fmt.Sprintf("(%s == %s)", val, CELString(src.Value))
	}
	trues := CELList([]string{"1", "t", "T", "TRUE", "true", "True"}) // what strconv.ParseBool reads as true
	if src.Flag != "" {
		return fmt.Sprintf("(%s == \"\" || %s in %s)", val, val, trues)
	}
	return fmt.Sprintf("(%s in %s)", val, trues)
}

// String names a source for messages: "annotation config.linkerd.io/admin-port", "flag
// --http-port", "variable CSQL_PROXY_HTTP_PORT".
func (src Source) String() string {
	switch {
	case src.Annotation != "":
		return "annotation " + src.Annotation
	case src.Flag != "":
		return "flag --" + src.Flag
	}
	return "variable " + src.Env
}

// FlagValue finds a flag of the sidecar's own command line, as the sidecars' flag libraries read
// them: --name=V, or --name V (also with one dash) unless the flag is boolean, which takes its
// value only after "=" (--quitquitquit false is the flag, then an argument). It stops at "--".
func FlagValue(args []string, name string, boolean bool) (string, bool) {
	for i, a := range args {
		if a == "--" {
			return "", false // what follows is not the sidecar's
		}
		a = strings.TrimLeft(a, "-")
		if a == name {
			if !boolean && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// FlagValueCEL is FlagValue in CEL, over the command and args of the container that the CEL
// expression c names: whether the flag is set (a bool), and its value (a string), which is
// defined only where the flag is set: a policy reads it under the condition of set.
func FlagValueCEL(c, name string, boolean bool) (set, val string) {
	argv := fmt.Sprintf("((has(%s.command) ? %s.command : []) + (has(%s.args) ? %s.args : []))", c, c, c, c)
	meta := quoteMeta(name)
	at := fmt.Sprintf("fl.map(a, a.matches(%s)).indexOf(true)", CELString("^-*"+meta+"(=|$)"))
	set = fmt.Sprintf(`[%s].map(fl, [%s].map(fi, [fl.indexOf("--")].map(fd, fi >= 0 && (fd < 0 || fi < fd))[0])[0])[0]`, argv, at)
	withValue := CELString("^-*" + meta + "=")
	next := `""`
	if !boolean {
		next = `(fi + 1 < size(fl) && !fl[fi + 1].startsWith("-") ? fl[fi + 1] : "")`
	}
	val = fmt.Sprintf("[%s].map(fl, [%s].map(fi, fl[fi].matches(%s) ? fl[fi].substring(size(fl[fi].find(%s))) : %s)[0])[0]", argv, at, withValue, withValue, next)
	return set, val
}
