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
