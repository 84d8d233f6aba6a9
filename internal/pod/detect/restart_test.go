package detect

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/shared/restart"
)

// TestRestartOf reads the restart policy and rules of this container from Pod objects: its own,
// else the pod's; and leaves them unknown, saying why, where the Pod cannot tell.
func TestRestartOf(t *testing.T) {
	in42 := []restart.Rule{{Action: restart.ActionRestart, ExitCodes: &restart.ExitCodes{Operator: restart.OpIn, Values: []int32{42}}}}
	const rules42 = `"restartPolicyRules":[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`
	tests := []struct {
		name     string
		spec     string
		env      []string
		want     restart.Spec
		wantOf   string
		wantNote string
	}{
		{"the pod's policy, no container named", `{"restartPolicy":"OnFailure","containers":[{"name":"job"},{"name":"istio-proxy"}]}`, nil,
			restart.Spec{Policy: restart.OnFailure}, "the pod's restartPolicy", ""},
		{"the container's own policy and rules", `{"restartPolicy":"OnFailure","containers":[{"name":"job","restartPolicy":"Never",` + rules42 + `},{"name":"other"}]}`,
			[]string{"SIDESYNC_CONTAINER=job"}, restart.Spec{Policy: restart.Never, Rules: in42}, "container job", ""},
		{"the pod's policy for a container without its own", `{"restartPolicy":"Always","containers":[{"name":"job"},{"name":"other","restartPolicy":"Never"}]}`,
			[]string{"POD_CONTAINER_NAME=job"}, restart.Spec{Policy: restart.Always}, "container job", ""},
		{"SIDESYNC_CONTAINER before POD_CONTAINER_NAME", `{"restartPolicy":"Never","containers":[{"name":"job","restartPolicy":"OnFailure"},{"name":"other"}]}`,
			[]string{"SIDESYNC_CONTAINER=job", "POD_CONTAINER_NAME=other"}, restart.Spec{Policy: restart.OnFailure}, "container job", ""},
		{"no container named, and one has its own", `{"restartPolicy":"Never","containers":[{"name":"job",` + rules42 + `},{"name":"other"}]}`, nil,
			restart.Spec{}, "", "containers job set their own restartPolicy, and neither SIDESYNC_CONTAINER nor POD_CONTAINER_NAME says which container this is"},
		{"a container that is not there", `{"restartPolicy":"Never","containers":[{"name":"job"}]}`, []string{"SIDESYNC_CONTAINER=jbo"},
			restart.Spec{}, "", "SIDESYNC_CONTAINER=jbo names no container of the pod"},
		{"rules sidesync cannot read", `{"restartPolicy":"Never","containers":[{"name":"job","restartPolicy":"Never","restartPolicyRules":[{"action":"Reboot","exitCodes":{"operator":"In","values":[1]}}]}]}`,
			[]string{"SIDESYNC_CONTAINER=job"}, restart.Spec{}, "", `cannot read the restart rules of container job: rule 0: action "Reboot"`},
		{"no policy at all: Kubernetes' default, Always", `{"containers":[{"name":"job"}]}`, nil, restart.Spec{Policy: restart.Always}, "the pod's restartPolicy", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := readPod([]byte(`{"spec":` + tt.spec + `}`))
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			got, of, note := restartOf(p, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
			if of != tt.wantOf || !strings.Contains(note, tt.wantNote) || (tt.wantNote == "") != (note == "") {
				t.Errorf("of %q, note %q; want %q, %q", of, note, tt.wantOf, tt.wantNote)
			}
		})
	}
}
