package inject

import (
	"fmt"
	"slices"

	"github.com/sidesync/sidesync/internal/contract"
)

// flags are the wrapper's flags before "--": where the pod's annotations are, and the sidecars
// the user named. The sidecars the manifest shows are not among them, since a --sidecar turns
// the wrapper's detection off, and with it the sidecars a mesh's webhook adds after inject:
// they go into contract.SidecarsAnnotation, which the wrapper reads together with the mesh's marks.
func flags(o Options) []string {
	f := []string{"--pod-info=" + contract.PodInfoDir}
	for _, s := range o.Sidecars {
		f = append(f, "--sidecar="+s)
	}
	return f
}

// wrapContainer makes sidesync the container's command: command [contract.Binary], args [flags...,
// "--", argv...], so that the user's words stay in args, where kubelet expands $(VAR). With
// per-platform argvs, nothing follows "--" and contract.Env(contract.FlagPlatformCommands) holds them.
func wrapContainer(d decision, o Options, podRestart string) error {
	c := d.c.m
	c["command"] = []any{contract.Binary}
	c["args"] = anyList(slices.Concat(flags(o), []string{"--"}, d.argv))
	if d.pinned != "" {
		c["image"] = d.pinned
	}
	var platformEnv []any
	if d.byPlat != nil {
		j, err := compactJSON(d.byPlat)
		if err != nil {
			return fmt.Errorf("%s: %w", d.c.path, err)
		}
		platformEnv = []any{envVar(contract.Env(contract.FlagPlatformCommands), j)}
	}
	if err := setEnv(d.c, podRestart, platformEnv, contract.Env(contract.FlagPlatformCommands)); err != nil {
		return err
	}
	return mountVolumes(d.c)
}

// refreshContainer brings a container that sidesync wraps already up to date: its restart
// environment and its mounts. Its command and args stay as they are (a wrapper's flags are
// never rewritten), and so does contract.Env(contract.FlagPlatformCommands), which only a registry could renew.
func refreshContainer(d decision, podRestart string) error {
	if err := setEnv(d.c, podRestart, nil); err != nil {
		return err
	}
	return mountVolumes(d.c)
}

// setEnv replaces inject's variables in the container's env: first drops them (and the names
// in drop), then appends extra and the restart variables. The user's entries keep their place.
func setEnv(c *ctr, podRestart string, extra []any, drop ...string) error {
	env, err := listAt(c.m, "env", c.path)
	if err != nil {
		return err
	}
	env = withoutNamed(env, append(drop, contract.Env(contract.FlagRestartPolicy), contract.Env(contract.FlagRestartRules))...)
	env = append(env, extra...)
	policy := str(c.m, "restartPolicy")
	if policy == "" {
		policy = podRestart
	}
	env = append(env, envVar(contract.Env(contract.FlagRestartPolicy), policy))
	if rules, ok := c.m["restartPolicyRules"]; ok && rules != nil {
		j, err := compactJSON(rules)
		if err != nil {
			return fmt.Errorf("%s.restartPolicyRules: %w", c.path, err)
		}
		env = append(env, envVar(contract.Env(contract.FlagRestartRules), j))
	}
	c.m["env"] = env
	return nil
}

func envVar(name, value string) map[string]any {
	return map[string]any{"name": name, "value": value}
}

// mountVolumes mounts the binary's volume at contract.BinDir and the pod's annotations at contract.PodInfoDir,
// both read-only, replacing inject's earlier mounts.
func mountVolumes(c *ctr) error {
	mounts, err := listAt(c.m, "volumeMounts", c.path)
	if err != nil {
		return err
	}
	mounts = withoutNamed(mounts, contract.BinVolume, contract.PodInfoVolume)
	c.m["volumeMounts"] = append(mounts,
		map[string]any{"name": contract.BinVolume, "mountPath": contract.BinDir, "readOnly": true},
		map[string]any{"name": contract.PodInfoVolume, "mountPath": contract.PodInfoDir, "readOnly": true})
	return nil
}
