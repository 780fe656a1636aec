package kernel

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// The Python driver is a small package, kernel/pydriver, whose modules each
// open with what they own. It is shipped as one program text run with
// python3 -u -c: a bootstrap that refuses an interpreter older than
// [MinPython] with a clear message, then makes each module from its source
// (in the order of driverModules, each importing only those before it),
// under the package name ctxcode_driver, and calls main.main().
//
//go:embed pydriver/*.py
var driverFS embed.FS

// driverModules is the order the bootstrap makes the driver's modules in.
var driverModules = []string{"capture", "limits", "display", "answer", "cells", "shell", "protocol", "main"}

// MinPython is the oldest CPython the driver runs on.
const MinPython = "3.9"

// The bootstrap is kept to a syntax that every Python parses, so an old
// interpreter meets the version check, not a syntax error.
const driverBootstrap = `# ctxcode Python kernel driver: the package ctxcode_driver (kernel/pydriver), made from its sources.
import sys
if sys.version_info < (%[1]s):
    sys.stderr.write("ctxcode: the Python kernel needs CPython %[2]s or later, and %%s is Python %%s: "
                     "install a newer python3, name one with --python, or use --sandbox docker\n"
                     %% (sys.executable, sys.version.split()[0]))
    sys.exit(1)


def _ctxcode_load(sources):
    import linecache
    import types

    pkg = types.ModuleType("ctxcode_driver")
    pkg.__path__ = []
    sys.modules["ctxcode_driver"] = pkg
    for name, src in sources:
        full, path = "ctxcode_driver." + name, "<ctxcode_driver/" + name + ".py>"
        mod = types.ModuleType(full)
        mod.__file__ = path
        sys.modules[full] = mod
        setattr(pkg, name, mod)
        linecache.cache[path] = (len(src), None, src.splitlines(True), path)
        exec(compile(src, path, "exec"), mod.__dict__)
    return pkg


_ctxcode_load([
%[3]s])
del _ctxcode_load
sys.modules["ctxcode_driver.main"].main()
`

var driver = sync.OnceValues(func() (string, string) {
	var mods strings.Builder
	for _, name := range driverModules {
		src, err := driverFS.ReadFile("pydriver/" + name + ".py")
		if err != nil {
			panic(fmt.Sprintf("kernel: the driver module %s is not embedded: %v", name, err))
		}
		// A JSON string is a Python string literal: Go escapes no '/', and
		// every escape it writes (\n, \t, \", \\, \uXXXX) is Python's too.
		lit, err := json.Marshal(string(src))
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&mods, "    (%q, %s),\n", name, lit)
	}
	ver := strings.Replace(MinPython, ".", ", ", 1)
	text := fmt.Sprintf(driverBootstrap, ver, MinPython, mods.String())
	sum := sha256.Sum256([]byte(text))
	return text, hex.EncodeToString(sum[:8])
})

// DriverSource is the Python kernel driver as one program text. Run it as
// python3 -u -c DriverSource(); it needs nothing but the standard library.
func DriverSource() string { text, _ := driver(); return text }

// DriverVersion names the driver's text (a hash of it): two kernels with
// the same interpreter and driver version give the same output for the
// same cells.
func DriverVersion() string { _, v := driver(); return v }

// PythonArgv is the command line that starts the Python driver with the
// given interpreter.
func PythonArgv(python string) []string {
	return []string{python, "-u", "-c", DriverSource()}
}
