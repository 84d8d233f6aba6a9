package admission

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/catalog"
)

// This file writes the catalog (internal/shared/catalog) as CEL: which containers of a pod are
// sidecars, which an orchestrator stops and which are apps, and what contract.FoundAnnotation
// says of each sidecar, exactly as catalog.Sort and config.FormatSidecar decide over a manifest.
// Nothing here knows a sidecar by name: every literal comes from a row.

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

// markCEL is catalog.Mark.On over the pod's annotations and labels.
func markCEL(m catalog.Mark) string {
	from := "variables.ann"
	if m.Label {
		from = "variables.lbl"
	}
	if m.Value == "" {
		return fmt.Sprintf("(%s in %s)", q(m.Key), from)
	}
	return fmt.Sprintf("(%s in %s && %s[%s] == %s)", q(m.Key), from, from, q(m.Key), q(m.Value))
}

func marksCEL(marks []catalog.Mark) string {
	var c []string
	for _, m := range marks {
		c = append(c, markCEL(m))
	}
	return or(c)
}

// matchCEL is catalog.Match.Matches for the container c. The image is compared in ASCII lower
// case (CEL has no Unicode case folding; image references are ASCII).
func matchCEL(m catalog.Match, c string) string {
	var conds []string
	if m.When != nil {
		conds = append(conds, markCEL(*m.When))
	}
	if m.Name != "" {
		conds = append(conds, fmt.Sprintf("%s.name == %s", c, q(m.Name)))
	}
	if m.NamePrefix != "" {
		conds = append(conds, fmt.Sprintf("(%s.name.startsWith(%s) && size(%s.name) > %d)", c, q(m.NamePrefix), c, len([]rune(m.NamePrefix))))
	}
	if m.Image != "" {
		conds = append(conds, fmt.Sprintf("(has(%s.image) && %s.image.lowerAscii().contains(%s))", c, c, q(strings.ToLower(m.Image))))
	}
	return and(conds)
}

// announceVar is the name of the variable that says whether row i is announced.
func announceVar(i int) string { return fmt.Sprintf("announced%d", i) }

// catalogCEL is the catalog as CEL.
type catalogCEL struct {
	rows []catalog.Entry
}

func newCatalogCEL() (*catalogCEL, error) {
	k := &catalogCEL{rows: catalog.Entries()}
	// claim (internal/shared/catalog/pod.go) claims an announcement by its container's name, then by
	// the row's Containers; the CEL below decides per container, without the state of the rows
	// claimed before, which gives the same answer as long as the names are distinct and a row's
	// Containers match only its own container's name. A row that breaks this needs the CEL
	// extended: refuse to write a policy that would disagree with inject.
	seen := map[string]string{}
	for _, e := range k.rows {
		if e.Container == "" {
			continue
		}
		if other, dup := seen[e.Container]; dup {
			return nil, fmt.Errorf("catalog rows %s and %s name the same container %s: the policy's CEL cannot tell which claims it", other, e.Name, e.Container)
		}
		seen[e.Container] = e.Name
		for _, m := range e.Containers {
			if m.Name != e.Container || m.NamePrefix != "" || m.Image != "" || m.When != nil {
				return nil, fmt.Errorf("catalog row %s: a container match other than its container's name %s: the policy's CEL does not follow claim's order for it", e.Name, e.Container)
			}
		}
	}
	return k, nil
}

// announced are the variables that say whether each row with marks or requests is announced
// (catalog's announce with Options.Requests, as inject reads a manifest).
func (k *catalogCEL) announced() [][2]string {
	var out [][2]string
	for i, e := range k.rows {
		if len(e.Marks)+len(e.Requests) == 0 {
			continue
		}
		expr := or([]string{marksCEL(e.Marks), marksCEL(e.Requests)})
		if len(e.Unless) > 0 {
			expr = "(!" + marksCEL(e.Unless) + " && " + expr + ")"
		}
		out = append(out, [2]string{announceVar(i), expr})
	}
	return out
}

// entry is the index of the row that claims container c, or -1 (an app): by name, a row that
// is announced; else the first row whose Containers match.
func (k *catalogCEL) entry(c string) string {
	var arms []string
	for i, e := range k.rows {
		if e.Container != "" && len(e.Marks)+len(e.Requests) > 0 {
			arms = append(arms, fmt.Sprintf("(variables.%s && %s.name == %s) ? %d", announceVar(i), c, q(e.Container), i))
		}
	}
	for i, e := range k.rows {
		if len(e.Containers) == 0 {
			continue
		}
		var ms []string
		for _, m := range e.Containers {
			ms = append(ms, matchCEL(m, c))
		}
		arms = append(arms, fmt.Sprintf("%s ? %d", or(ms), i))
	}
	return "(" + strings.Join(append(arms, "-1"), " : ") + ")"
}

// profiles are the indexes of the rows that are profiles (a regular container they claim is a
// sidecar); the others are stopped by their orchestrator.
func (k *catalogCEL) profiles() []int {
	var out []int
	for i := range k.rows {
		if k.rows[i].IsProfile() {
			out = append(out, i)
		}
	}
	return out
}

// announcing are the indexes of the rows that can be announced.
func (k *catalogCEL) announcing() []int {
	var out []int
	for i, e := range k.rows {
		if len(e.Marks)+len(e.Requests) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// found is, for the sidecar container c claimed by row i (the CEL int ent), its entry of
// contract.FoundAnnotation, or "" when it has none: config.FormatSidecar of the profile that
// catalog's Sidecar.read makes of its settings.
func (k *catalogCEL) found(c, ent string, init bool) string {
	var arms []string
	for i := range k.rows {
		e := &k.rows[i]
		if !e.IsProfile() || (len(e.Containers) == 0 && e.Container == "") {
			continue
		}
		arms = append(arms, fmt.Sprintf("%s == %d ? %s", ent, i, k.spec(e, c, init)))
	}
	return "(" + strings.Join(append(arms, `""`), " : ") + ")"
}

// spec is FormatSidecar(e.Name, profile) for container c.
func (k *catalogCEL) spec(e *catalog.Entry, c string, init bool) string {
	native := "false" // a regular container is never native
	if init {
		native = "true" // only native init containers are sorted
	}
	var settings []string
	if e.Sidecar.Ready != nil {
		settings = append(settings, endpointCEL("ready", e.Sidecar.Ready.URL, k.offCEL(e.ReadySwitch, c, false), k.portCEL(e.ReadyPort, c)))
	}
	if e.Sidecar.Quit != nil {
		settings = append(settings, endpointCEL("quit", e.Sidecar.Quit.URL, k.offCEL(e.QuitSwitch, c, true), k.portCEL(e.QuitPort, c)))
	}
	settings = append(settings,
		fmt.Sprintf("(%s ? %s : \"\")", native, q("native=true")),
		fmt.Sprintf("((%s && has(%s.startupProbe)) ? %s : \"\")", native, c, q("startup-probe=true")))
	return fmt.Sprintf("[[%s].filter(x, x != \"\")].map(ss, %s + (size(ss) == 0 ? \"\" : \":\" + ss.join(\",\")))[0]",
		strings.Join(settings, ", "), q(e.Name))
}

// endpointCEL is the setting config's endpointSetting writes: none when the endpoint is off, its
// port when another, else nothing.
func endpointCEL(key, url, off, port string) string {
	def := defaultPort(url)
	return fmt.Sprintf("(%s ? %s : [%s].map(pp, (pp != 0 && pp != %d) ? %s + string(pp) : \"\")[0])", off, q(key+"=none"), port, def, q(key+"-port="))
}

// defaultPort is the port of a row's URL.
func defaultPort(raw string) int {
	m := regexp.MustCompile(`^[a-z]+://[^/]*:([0-9]+)`).FindStringSubmatch(raw)
	if m == nil {
		panic("catalog URL without a port: " + raw)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// portCEL is catalog's Sidecar.port: the port the first source the pod sets gives, 0 when none
// does, when its value is no port, or when it is hidden (valueFrom).
func (k *catalogCEL) portCEL(sources []catalog.Source, c string) string {
	expr := "0"
	for i := len(sources) - 1; i >= 0; i-- {
		set, val, hidden := sourceCEL(sources[i], c, true)
		valid := fmt.Sprintf("[%s.trim()].map(pv, pv.matches(\"^[+]?[0-9]{1,10}$\") && int(pv) >= 1 && int(pv) <= 65535 ? int(pv) : 0)[0]", val)
		expr = fmt.Sprintf("(%s ? %s : %s ? 0 : %s)", set, valid, hidden, expr)
	}
	return expr
}

// offCEL says whether the switch leaves the endpoint off for sure, so that the profile drops
// it: catalog's Sidecar.off, and read's use of it (the readiness check goes whenever it is off
// and not hidden; the quit call only when certainly off).
func (k *catalogCEL) offCEL(sw *catalog.Switch, c string, quit bool) string {
	if sw == nil {
		return "false"
	}
	last := "true"
	if quit && sw.Maybe != "" {
		last = "false"
	}
	expr := last
	for i := len(sw.On) - 1; i >= 0; i-- {
		src := sw.On[i]
		set, val, hidden := sourceCEL(src, c, false)
		expr = fmt.Sprintf("(%s ? !%s : %s ? false : %s)", set, onCEL(src, val), hidden, expr)
	}
	var un []string
	for _, m := range sw.Unavailable {
		un = append(un, matchCEL(m, c))
	}
	if len(un) > 0 {
		expr = fmt.Sprintf("(%s ? true : %s)", or(un), expr)
	}
	return expr
}

// onCEL is catalog's Source.on.
func onCEL(src catalog.Source, val string) string {
	if src.Value != "" {
		return fmt.Sprintf("(%s == %s)", val, q(src.Value))
	}
	trues := celList([]string{"1", "t", "T", "TRUE", "true", "True"}) // strconv.ParseBool's
	if src.Flag != "" {
		return fmt.Sprintf("(%s == \"\" || %s in %s)", val, val, trues)
	}
	return fmt.Sprintf("(%s in %s)", val, trues)
}

// sourceCEL is catalog's Sidecar.value and hidden for container c: whether the pod sets the
// source, its value, and whether it is set from a valueFrom the manifest does not show.
func sourceCEL(src catalog.Source, c string, port bool) (set, val, hidden string) {
	switch {
	case src.Annotation != "":
		return fmt.Sprintf("(%s in variables.ann)", q(src.Annotation)), fmt.Sprintf("variables.ann[%s]", q(src.Annotation)), "false"
	case src.Flag != "":
		return flagCEL(src.Flag, c, src.Value == "" && !port)
	}
	first := fmt.Sprintf("%s.env.filter(e, e.name == %s)", c, q(src.Env))
	has := fmt.Sprintf("(has(%s.env) && size(%s) > 0)", c, first)
	val = fmt.Sprintf("(%s && has(%s[0].value) ? %s[0].value : \"\")", has, first, first)
	hidden = fmt.Sprintf("(%s && has(%s[0].valueFrom))", has, first)
	set = fmt.Sprintf("(%s && !has(%s[0].valueFrom) && %s != \"\")", has, first, val)
	return set, val, hidden
}

// flagCEL is catalog.FlagValue over the container's command and args.
func flagCEL(name, c string, boolean bool) (set, val, hidden string) {
	argv := fmt.Sprintf("((has(%s.command) ? %s.command : []) + (has(%s.args) ? %s.args : []))", c, c, c, c)
	meta := regexp.QuoteMeta(name)
	at := fmt.Sprintf("fl.map(a, a.matches(%s)).indexOf(true)", q("^-*"+meta+"(=|$)"))
	set = fmt.Sprintf(`[%s].map(fl, [%s].map(fi, [fl.indexOf("--")].map(fd, fi >= 0 && (fd < 0 || fi < fd))[0])[0])[0]`, argv, at)
	withValue := q("^-*" + meta + "=")
	next := `""`
	if !boolean {
		next = `(fi + 1 < size(fl) && !fl[fi + 1].startsWith("-") ? fl[fi + 1] : "")`
	}
	val = fmt.Sprintf("[%s].map(fl, [%s].map(fi, fl[fi].matches(%s) ? fl[fi].substring(size(fl[fi].find(%s))) : %s)[0])[0]", argv, at, withValue, withValue, next)
	return set, val, "false"
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
