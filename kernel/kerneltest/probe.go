package kerneltest

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// ProcReport is what a [ProcProbe] cell saw of the processes around it.
type ProcReport struct {
	UID       int      `json:"uid"`
	PID       int      `json:"pid"`
	PPID      int      `json:"ppid"`
	Ancestors []int    `json:"ancestors"` // parent first, by PPid in /proc/PID/status, up to pid 1
	Visible   int      `json:"visible"`   // other processes listed in /proc
	Read      []string `json:"read"`      // the /proc files the cell could read
	Found     []string `json:"found"`     // the files in which the secret was found
}

// probeMarker starts the line on which a probe prints its report.
const probeMarker = "CTXCODE-PROC-PROBE:"

// ProcProbe is a cell, in lang, that tries to read the environ, cmdline and
// mem of its parent and of every ancestor up to pid 1, and the environ and
// cmdline of every other process it can see in /proc, and reports where it
// found secret. The cell carries secret in hex, so that its own text (which
// the process that sends it holds in memory) does not count as a find.
func ProcProbe(lang kernel.Language, secret string) string {
	h := hex.EncodeToString([]byte(secret))
	if lang == kernel.Go {
		return strings.ReplaceAll(goProbe, "SECRET_HEX", h)
	}
	return strings.ReplaceAll(pythonProbe, "SECRET_HEX", h)
}

// ParseProcReport finds the report a [ProcProbe] printed in stdout.
func ParseProcReport(stdout string) (ProcReport, error) {
	var r ProcReport
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, probeMarker); ok {
			err := json.Unmarshal([]byte(rest), &r)
			return r, err
		}
	}
	return r, fmt.Errorf("no probe report in the output: %q", stdout)
}

const pythonProbe = `import json as _json, os as _os

def _probe():
    secret = bytes.fromhex("SECRET_HEX")
    rep = {"uid": _os.getuid(), "pid": _os.getpid(), "ppid": _os.getppid(),
           "ancestors": [], "visible": 0, "read": [], "found": []}

    def ppid_of(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("PPid:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            pass
        return 0

    def seen(path, hit):
        rep["read"].append(path)
        if hit:
            rep["found"].append(path)

    anc = []
    p = ppid_of("self")
    while p > 0 and p not in anc:
        anc.append(p)
        p = ppid_of(p)
    rep["ancestors"] = anc
    others = {int(d) for d in _os.listdir("/proc") if d.isdigit()} - {_os.getpid()}
    rep["visible"] = len(others)
    for pid in sorted(others | set(anc)):
        for name in ("environ", "cmdline"):
            path = f"/proc/{pid}/{name}"
            try:
                with open(path, "rb") as f:
                    seen(path, secret in f.read())
            except OSError:
                pass
    for pid in anc:
        try:
            with open(f"/proc/{pid}/maps") as f:
                maps = f.read().splitlines()
            mem = open(f"/proc/{pid}/mem", "rb", buffering=0)
        except OSError:
            continue
        got, hit = 0, False
        with mem:
            for line in maps:
                span, perms = line.split()[:2]
                if perms[0] != "r":
                    continue
                lo, hi = (int(x, 16) for x in span.split("-"))
                pos, tail = lo, b""
                while pos < hi:
                    try:
                        mem.seek(pos)
                        chunk = mem.read(min(1 << 20, hi - pos))
                    except (OSError, ValueError, OverflowError):
                        break
                    if not chunk:
                        break
                    got += len(chunk)
                    hit = hit or secret in tail + chunk
                    tail = chunk[-len(secret):]
                    pos += len(chunk)
        if got:
            seen(f"/proc/{pid}/mem", hit)
    print("` + probeMarker + `" + _json.dumps(rep))

_probe()
`

const goProbe = `import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

type probeReport struct {
	UID       int      ` + "`json:\"uid\"`" + `
	PID       int      ` + "`json:\"pid\"`" + `
	PPID      int      ` + "`json:\"ppid\"`" + `
	Ancestors []int    ` + "`json:\"ancestors\"`" + `
	Visible   int      ` + "`json:\"visible\"`" + `
	Read      []string ` + "`json:\"read\"`" + `
	Found     []string ` + "`json:\"found\"`" + `
}

func probePPid(pid string) int {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "PPid:") {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "PPid:")))
			return n
		}
	}
	return 0
}

func probeMem(pid int, secret []byte) (int64, bool) {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, false
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return 0, false
	}
	defer mem.Close()
	var got int64
	hit := false
	buf := make([]byte, 1<<20)
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		span := strings.SplitN(f[0], "-", 2)
		lo, err1 := strconv.ParseUint(span[0], 16, 64)
		hi, err2 := strconv.ParseUint(span[1], 16, 64)
		if err1 != nil || err2 != nil || hi > 1<<63-1 {
			continue
		}
		var tail []byte
		for pos := lo; pos < hi; {
			n := uint64(len(buf))
			if hi-pos < n {
				n = hi - pos
			}
			k, err := mem.ReadAt(buf[:n], int64(pos))
			if k <= 0 {
				break
			}
			got += int64(k)
			if bytes.Contains(append(tail, buf[:k]...), secret) {
				hit = true
			}
			if k >= len(secret) {
				tail = append([]byte(nil), buf[k-len(secret):k]...)
			}
			pos += uint64(k)
			if err != nil && err != io.EOF {
				break
			}
		}
	}
	return got, hit
}

func probe() {
	secret, _ := hex.DecodeString("SECRET_HEX")
	rep := probeReport{UID: os.Getuid(), PID: os.Getpid(), PPID: os.Getppid(), Ancestors: []int{}, Read: []string{}, Found: []string{}}
	seen := func(path string, hit bool) {
		rep.Read = append(rep.Read, path)
		if hit {
			rep.Found = append(rep.Found, path)
		}
	}
	for p := probePPid("self"); p > 0; p = probePPid(strconv.Itoa(p)) {
		dup := false
		for _, a := range rep.Ancestors {
			dup = dup || a == p
		}
		if dup {
			break
		}
		rep.Ancestors = append(rep.Ancestors, p)
	}
	pids := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil && n != os.Getpid() {
			pids[n] = true
		}
	}
	rep.Visible = len(pids)
	for _, a := range rep.Ancestors {
		pids[a] = true
	}
	var all []int
	for p := range pids {
		all = append(all, p)
	}
	sort.Ints(all)
	for _, p := range all {
		for _, name := range []string{"environ", "cmdline"} {
			path := fmt.Sprintf("/proc/%d/%s", p, name)
			if b, err := os.ReadFile(path); err == nil {
				seen(path, bytes.Contains(b, secret))
			}
		}
	}
	for _, p := range rep.Ancestors {
		if got, hit := probeMem(p, secret); got > 0 {
			seen(fmt.Sprintf("/proc/%d/mem", p), hit)
		}
	}
	b, _ := json.Marshal(rep)
	fmt.Println("` + probeMarker + `" + string(b))
}

probe()
`

// Nobody is the unprivileged user tests run ctxcode as when they are root.
const Nobody = 65534

// CopyForNobody copies the executable exe into a new folder that user
// [Nobody] can enter (t.TempDir makes folders only their owner can), and
// returns the folder and the copy.
func CopyForNobody(t testing.TB, exe string) (dir, copied string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	in, err := os.Open(exe)
	require.NoError(t, err)
	defer in.Close()
	copied = filepath.Join(dir, filepath.Base(exe))
	out, err := os.OpenFile(copied, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
	return dir, copied
}
