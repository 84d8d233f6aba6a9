package restart

import "strconv"

// PolicyCEL is, in CEL, the restartPolicy that Effective chooses for a regular container, as the
// admission policies write it for the wrapper: the container's own when it says one, else its
// pod's, else Always (a string, as written: the wrapper reads it with ParsePolicy). container and
// podSpec are CEL expressions of the container and of the pod's spec.
func PolicyCEL(container, podSpec string) string {
	own, pod := container+".restartPolicy", podSpec+".restartPolicy"
	return "(has(" + own + ") && " + own + `.trim() != "") ? ` + own + " : " +
		"(has(" + pod + ") && " + pod + `.trim() != "") ? ` + pod + " : " + strconv.Quote(string(Always))
}

// FormatRulesCEL is FormatRules in CEL, for the restartPolicyRules (a list, as the API server
// hands it) that the CEL expression rules names, as the admission policies write them for the
// wrapper: the same JSON for every list of which PlainRulesCEL holds. CEL cannot escape a JSON
// string, so an action or operator is written as it is.
func FormatRulesCEL(rules string) string {
	return `"[" + ` + rules + `.map(r, "{\"action\":\"" + r.action + "\",\"exitCodes\":" + (!has(r.exitCodes) ? "null" : ` +
		`"{\"operator\":\"" + r.exitCodes.operator + "\",\"values\":" + (has(r.exitCodes.values) ? "[" + r.exitCodes.values.map(v, string(v)).join(",") + "]" : "null") + "}") + "}").join(",") + "]"`
}

// PlainRulesCEL is, in CEL, whether FormatRulesCEL writes the rules that the CEL expression
// rules names as FormatRules does: each action and operator is a word of ASCII letters, which
// JSON writes without escapes. Every list RulesFrom reads is plain; a policy writes
// FormatRulesCEL only where PlainRulesCEL holds.
func PlainRulesCEL(rules string) string {
	return rules + `.all(r, r.action.matches("^[A-Za-z]+$") && (!has(r.exitCodes) || r.exitCodes.operator.matches("^[A-Za-z]+$")))`
}
