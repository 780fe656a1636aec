package kernel

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDriverPackage: every embedded module is shipped, opens with the
// docstring that says what it owns, and imports only the modules made
// before it; the program text fits in one argument of a command line.
func TestDriverPackage(t *testing.T) {
	entries, err := driverFS.ReadDir("pydriver")
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".py"))
	}
	assert.ElementsMatch(t, driverModules, files, "every module of kernel/pydriver is shipped, and only those")

	imports := regexp.MustCompile(`(?m)^\s*from ctxcode_driver import ([\w, ]+)$`)
	for i, name := range driverModules {
		src, err := driverFS.ReadFile("pydriver/" + name + ".py")
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(src), `"""`), "%s.py opens with a docstring saying what it owns", name)
		for _, m := range imports.FindAllStringSubmatch(string(src), -1) {
			for _, dep := range strings.Split(m[1], ",") {
				dep = strings.TrimSpace(dep)
				j := slices.Index(driverModules, dep)
				assert.True(t, j >= 0 && j < i, "%s imports %s, which is not made before it", name, dep)
			}
		}
		assert.NotContains(t, string(src), "import ctxcode_driver.", "%s: modules are imported as from ctxcode_driver import X", name)
	}

	// Linux's MAX_ARG_STRLEN: one argument of at most 32 pages.
	assert.Less(t, len(DriverSource()), 128<<10, "the driver is one argument of python3 -c")
	assert.Len(t, DriverVersion(), 16)
	assert.Equal(t, []string{"python3", "-u", "-c", DriverSource()}, PythonArgv("python3"))
}
