package inject

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgv covers the four cases of
// https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/#notes
// and what follows from an empty ENTRYPOINT or CMD.
func TestArgv(t *testing.T) {
	img := ImageCommand{Entrypoint: []string{"/docker-entrypoint.sh"}, Cmd: []string{"nginx", "-g", "daemon off;"}}
	tests := []struct {
		name          string
		command, args []string
		img           ImageCommand
		want          []string
	}{
		{"neither command nor args: ENTRYPOINT then CMD", nil, nil, img,
			[]string{"/docker-entrypoint.sh", "nginx", "-g", "daemon off;"}},
		{"command only: the image's ENTRYPOINT and CMD are ignored", []string{"sleep"}, nil, img,
			[]string{"sleep"}},
		{"args only: ENTRYPOINT then the args, CMD ignored", nil, []string{"nginx", "-T"}, img,
			[]string{"/docker-entrypoint.sh", "nginx", "-T"}},
		{"command and args: both, the image ignored", []string{"sh", "-c"}, []string{"echo $(MSG)"}, img,
			[]string{"sh", "-c", "echo $(MSG)"}},
		{"no ENTRYPOINT, no args: CMD alone", nil, nil, ImageCommand{Cmd: []string{"python3"}},
			[]string{"python3"}},
		{"no ENTRYPOINT, args: the args alone (not CMD, unlike Tekton)", nil, []string{"job.py"}, ImageCommand{Cmd: []string{"python3"}},
			[]string{"job.py"}},
		{"ENTRYPOINT, no CMD, no args", nil, nil, ImageCommand{Entrypoint: []string{"/app"}},
			[]string{"/app"}},
		{"nothing at all", nil, nil, ImageCommand{}, nil},
		{"empty command counts as none", []string{}, []string{"x"}, img,
			[]string{"/docker-entrypoint.sh", "x"}},
		{"the image's dollars are escaped, the container's are not", nil, []string{"--user=$(USER)"},
			ImageCommand{Entrypoint: []string{"sh", "-c", `echo "$(date)" $HOME $$`}},
			[]string{"sh", "-c", `echo "$$(date)" $$HOME $$$$`, "--user=$(USER)"}},
		{"CMD's dollars are escaped too", nil, nil, ImageCommand{Cmd: []string{"echo", "$(X)"}},
			[]string{"echo", "$$(X)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Argv(tt.command, tt.args, tt.img)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Argv(%q, %q, %+v) (-want +got):\n%s", tt.command, tt.args, tt.img, diff)
			}
		})
	}
}

// TestEscapeWordsInvertsKubeletExpansion checks escapeWords against a copy of kubelet's
// expansion rules (k8s.io/kubernetes third_party/forked/golang/expansion): every escaped word
// expands back to itself, whatever variables exist.
func TestEscapeWordsInvertsKubeletExpansion(t *testing.T) {
	words := []string{"plain", "$(HOME)", "$HOME", "$$", "a$$(b)", "$(", "$", "x$", "$(A)$(B)", "$$$("}
	vars := map[string]string{"HOME": "/root", "A": "1", "B": "2", "b": "3"}
	for i, w := range escapeWords(words) {
		if got := kubeletExpand(w, vars); got != words[i] {
			t.Errorf("escaped %q as %q, which kubelet expands to %q", words[i], w, got)
		}
	}
}

// kubeletExpand is kubelet's expansion of command, args and env values: $$ is $, $(NAME) is
// the variable (left as written when unknown), any other $ stays.
func kubeletExpand(s string, vars map[string]string) string {
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			out = append(out, s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			out = append(out, '$')
			i++
		case '(':
			end := -1
			for j := i + 2; j < len(s); j++ {
				if s[j] == ')' {
					end = j
					break
				}
			}
			if end < 0 {
				out = append(out, "$("...)
				i++
				continue
			}
			name := s[i+2 : end]
			if v, ok := vars[name]; ok {
				out = append(out, v...)
			} else {
				out = append(out, "$("+name+")"...)
			}
			i = end
		default:
			out = append(out, '$', s[i+1])
			i++
		}
	}
	return string(out)
}
