package releasetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvInstallRequired, set to anything but "" or "0", turns the skip for a missing install tool
// (helm, krew, kubectl: Tool) into a test failure, so that a CI run that built them cannot
// silently skip the install tests.
const EnvInstallRequired = "SIDESYNC_INSTALL_REQUIRED"

// Tool returns the path of the real install tool name (helm, krew or kubectl) that
// .ci/build-NAME.sh builds: NAME in $SIDESYNC_NAME_BIN, by default
// ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/NAME, as in the script. When it is missing, the
// test skips with one line that names the script, or fails with SIDESYNC_INSTALL_REQUIRED.
func Tool(t testing.TB, name string) string {
	t.Helper()
	env := "SIDESYNC_" + strings.ToUpper(name) + "_BIN"
	dir := os.Getenv(env)
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "sidesync-ci", name)
	}
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		msg := "the real " + name + " is not in " + dir + " (" + env + "): build it with `bash .ci/build-" + name + ".sh`"
		if r := os.Getenv(EnvInstallRequired); r != "" && r != "0" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}
