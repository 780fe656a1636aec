package kerneltest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// The Python driver runs a cell before IPython has loaded only when IPython
// would give it the same output and leave the same state behind (see "IPython
// in the background" in kernel/driver.py). EarlyParity checks that claim: it
// runs each of EarlySessions in a kernel that imports IPython first
// (CTXCODE_IPYTHON_START=eager) and in one that never loads it until a cell
// needs it (hold), then ends both with a cell that prints what IPython's
// history and namespace hold, and compares every response but its time. It
// also checks which cells ran early, so a driver that ran none early (and so
// could not differ) fails.

// EarlyCell is one cell of a session and whether the hold kernel runs it
// before IPython.
type EarlyCell struct {
	Code  string
	Early bool
	// Late: the cell runs early but its value is formatted by IPython, so
	// IPython is loaded at its end and the cells after it run there.
	Late      bool
	TimeoutMS int
}

// EarlySession is a sequence of cells run in one kernel.
type EarlySession struct {
	Name  string
	Cells []EarlyCell
}

func early(code string) EarlyCell { return EarlyCell{Code: code, Early: true} }
func waits(code string) EarlyCell { return EarlyCell{Code: code} }
func late(code string) EarlyCell  { return EarlyCell{Code: code, Early: true, Late: true} }

// EarlySessions are the cells compared: those the driver runs early, and
// next to each kind the near miss it must leave to IPython.
var EarlySessions = []EarlySession{
	{"a project prefix", []EarlyCell{
		early("import json, os, tempfile\nhere = tempfile.gettempdir()\nfor name, rows in [('teams', [{'id': 1, 'name': 'core'}]), ('tasks', [{'id': 7, 'status': 'open', 'hours': 1.5}, {'id': 8, 'status': 'done', 'hours': None}])]:\n    with open(f'{here}/ctxcode-early-{name}.jsonl', 'w') as f:\n        f.write(''.join(json.dumps(r) + '\\n' for r in rows))\nsorted(n for n in os.listdir(here) if n.startswith('ctxcode-early-'))"),
		early("def load(name):\n    return [json.loads(l) for l in open(f'{here}/ctxcode-early-{name}.jsonl')]\nteams, tasks = (load(n) for n in ['teams', 'tasks'])\nlen(teams), len(tasks)"),
		early("sorted({t['status'] for t in tasks})"),
		early("teams[-1], tasks[-1]"),
		early("tasks"),
		early("print('rows:', len(tasks))\n{t['id']: t for t in tasks}"),
	}},
	{"values the driver prints", []EarlyCell{
		early("1+1"),
		early("[1.5, -0.0, 1e100, 2**100, True, None, b'x', 'a\\nb', (1,), (), {}, set(), frozenset({3, 1, 2})]"),
		early("{'k%d' % i: list(range(i)) for i in range(12)}"),
		early("{(1, 'a'): {'deep': [[1, [2, [3, [4]]]]] * 3}}"),
		early("sorted({(i % 7, chr(97 + i % 26)) for i in range(60)})"),
		early("x = 1\nx;"),
		early("None"),
		early("'line\\n' * 3"),
		early("list(range(999))"),
		early("{1, 'a', 2, 'b', 10}, {('user', 'x' * 60): ['y' * 20, 'z' * 20]}"),
		early("[{'name': 'n%d' % i, 'tags': ['t' * (i % 5)] * (i % 4), 'score': i / 7} for i in range(9)]"),
		late("list(range(1500))"),
		early("1"),
	}},
	{"errors and what a failed cell leaves", []EarlyCell{
		early("print('before')\n1/0"),
		early("def f(d):\n    return d['missing']\n\n\ndef g():\n    return f({})"),
		early("a = 5\ng()"),
		early("a"),
		early("import re\nre.compile('[[a]')\nx = 2"),
		early("re.compile('[[a]')\nx = 3"),
		early("\n\n  y = 1\n  y / 0"),
		early("import os\nos.write(2, b'to fd 2\\n')\nos.write(1, b'to fd 1\\n')\n3"),
		early("raise ValueError('bad value')"),
		early("ANSWER({'a': [1, 2]})"),
		early("print('after')"),
	}},
	{"the namespace's names, added and taken away", []EarlyCell{
		early("a = 1\nb = 2"),
		early("c = 3\na = 4\n(a, b, c)"),
		early("import csv, io, statistics\nstatistics.mean([1, 2, 4])"),
		early("   \n"),
		early(""),
		early("d = {'x': 1}\nd"),
		{Code: "import time\ntime.sleep(5)", Early: true, TimeoutMS: 300},
		early("d"),
	}},
	{"IPython's history names after early values", []EarlyCell{
		early("1+1"),
		early("2+2\n3+3"),
		waits("_, __, ___, _1, _i1, In[1], Out"),
		early("4+4"),
	}},
}

// EarlyLateValues are values the driver leaves to IPython's formatter:
// each ends the early part of a session of its own.
var EarlyLateValues = []string{
	"import collections\ncollections.Counter('abracadabra')",
	"collections.OrderedDict(a=1, b=[2, 3])",
	"class Money:\n    def __init__(self, c):\n        self.c = c\n    def __repr__(self):\n        return 'Money(%d)' % self.c\n[Money(1), Money(20)]",
	"class Pretty:\n    def _repr_pretty_(self, p, cycle):\n        p.text('pretty!')\n    def __repr__(self):\n        return 'plain'\n[Pretty()]",
	"import datetime, decimal\ndatetime.date(2024, 1, 2), decimal.Decimal('1.10')",
	"len",
	"l = [1]\nl.append(l)\nl",
	"True.__class__",
	"{'a': 1, 'b': 2}.keys()",
	"2**1000",
	"import os\npid = os.fork()\nif pid == 0:\n    print('child')\nelse:\n    os.waitpid(pid, 0)\nrange(3)",
}

// EarlyNearMisses are cells the driver must leave to IPython: each is run
// after two early cells, in a session of its own.
var EarlyNearMisses = []string{
	"_", "_i", "_2", "In", "Out", "for _ in range(3):\n    pass\n_",
	"pwd", "who", "y = 6", "ls",
	">>> 1 + 1", "x = 1\n... \nx", "In [1]: 2 + 2",
	"import sys\nsys.version_info[0]", "os.environ.get('HOME') is not None", "os.chdir('/')",
	"sorted(globals())[:3]", "display(1)", "import pandas", "from os import *", "import warnings",
	"open(0)", "f = open\nf is open", "import asyncio\nawait asyncio.sleep(0, result=1)",
	"exit", "n: int = 1", "1 +", "def h(:\n    pass", "return 5",
	"del x", "x = 1\n'note'\ny = 2", "if False:\n    n: int = 1", "try:\n    1/0\nexcept ZeroDivisionError as _:\n    pass",
	"x is 1", "y = [(1, 2) (3, 4)]", "from os import chdir", "getattr(os, 'chdir')", "getattr(os, 'ch' + 'dir')",
	"os.sys.version_info[0]", "sorted(len.__self__.__dict__)[:2]", "import traceback", "ANSWER = 1", "_stdout",
	"g = getattr\ng(os, 'chdir')", "os.__getattribute__('chdir')", "import operator\noperator.attrgetter('sys')(os)",
	"import pickle", "import _warnings", "import timeit",
}

func earlySessions() []EarlySession {
	out := append([]EarlySession(nil), EarlySessions...)
	for _, c := range EarlyNearMisses {
		out = append(out, EarlySession{"waits: " + c, []EarlyCell{early("import os\nx = 1"), early("x + 1"), waits(c), early("x")}})
	}
	for _, c := range EarlyLateValues {
		code := c
		if !strings.HasPrefix(c, "import collections") && strings.Contains(c, "collections.") {
			code = "import collections\n" + c
		}
		out = append(out, EarlySession{"late: " + c, []EarlyCell{early("y = [1]\ny"), late(code), early("y")}})
	}
	return out
}

// EarlyState is the last cell of every session: what the two kernels must
// agree on after it.
const EarlyState = `import sys, builtins, linecache, warnings
ip = get_ipython()
ns = globals()
print(list(ns))
print(In)
print(Out)
print([(k, ns[k]) for k in sorted(ns) if k.startswith('_i') or k.strip('_').isdigit() or k in ('_', '__', '___')])
print(ip.execution_count, ip.history_manager.input_hist_raw, ip.last_execution_succeeded)
print(sorted(ip.compile._filename_map.items()))
print(sorted(k for k in linecache.cache if k.startswith('<ipython-input')))
print(sorted(ip.user_ns_hidden))
print(warnings.filters[:4])
print(sorted(vars(builtins)))
print(sys.modules['__main__'].__dict__ is ns, __doc__, __name__, type(ip).__name__)
print(ns['exit'], getattr(ANSWER, '__name__', ANSWER), sorted(_stdout), sorted(_stderr))`

// RawKernel is a driver spoken to in its own protocol, so that fields the
// client does not keep (the "early" trace) can be read.
type RawKernel struct {
	conn kernel.Conn
	r    *bufio.Reader
	id   int
}

// NewRawKernel starts a kernel over t.
func NewRawKernel(tb testing.TB, t kernel.Transport) *RawKernel {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := t.Start(ctx)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Kill(); <-conn.Done() })
	return &RawKernel{conn: conn, r: bufio.NewReaderSize(conn, 1<<20)}
}

// Do sends one request and returns its response.
func (k *RawKernel) Do(tb testing.TB, req map[string]any) map[string]any {
	tb.Helper()
	k.id++
	req["id"] = k.id
	b, err := json.Marshal(req)
	require.NoError(tb, err)
	_, err = k.conn.Write(append(b, '\n'))
	require.NoError(tb, err)
	line, err := k.r.ReadBytes('\n')
	require.NoError(tb, err, "reading the response to %v", req)
	var res map[string]any
	require.NoError(tb, json.Unmarshal(line, &res), "%s", line)
	return res
}

// Exec runs a cell.
func (k *RawKernel) Exec(tb testing.TB, code string, timeoutMS int) map[string]any {
	req := map[string]any{"op": "exec", "code": code}
	if timeoutMS > 0 {
		req["timeout_ms"] = timeoutMS
	}
	return k.Do(tb, req)
}

// EarlyParity runs every session in the kernels start makes with the
// environment it is given (eager, hold, and background, which may run any of
// the early cells early or not) and compares them.
func EarlyParity(t *testing.T, start func(t *testing.T, env []string) *RawKernel) {
	for _, s := range earlySessions() {
		t.Run(s.Name, func(t *testing.T) {
			runs := map[string][]map[string]any{}
			for _, mode := range []string{"eager", "hold", "background"} {
				// a fixed hash seed: a set of strings prints in one order in every kernel
				k := start(t, []string{"CTXCODE_IPYTHON_START=" + mode, "CTXCODE_TRACE_EARLY=1", "PYTHONHASHSEED=0"})
				ping := k.Do(t, map[string]any{"op": "ping"})
				require.Contains(t, fmt.Sprint(ping["value"]), "ipython", mode)
				var got []map[string]any
				switched := false
				for i, c := range s.Cells {
					res := k.Exec(t, c.Code, c.TimeoutMS)
					switched = switched || !c.Early
					if mode == "hold" {
						assert.Equal(t, !switched, res["early"], "cell %d %q: ran early", i, c.Code)
					}
					switched = switched || c.Late
					if mode == "eager" {
						assert.Equal(t, false, res["early"], "cell %d %q", i, c.Code)
					}
					got = append(got, res)
				}
				last := k.Exec(t, EarlyState, 0)
				assert.Equal(t, "ok", last["status"], "%s: %v", mode, last["error"])
				got = append(got, last)
				for _, res := range got {
					delete(res, "elapsed_ms")
					delete(res, "early")
					delete(res, "id")
				}
				runs[mode] = got
			}
			for _, mode := range []string{"hold", "background"} {
				for i := range runs["eager"] {
					code := EarlyState
					if i < len(s.Cells) {
						code = s.Cells[i].Code
					}
					if d := responseDiff(runs["eager"][i], runs[mode][i]); d != "" {
						t.Errorf("%s, cell %d %q differs from eager IPython: %s", mode, i, code, d)
					}
				}
			}
		})
	}
}

// responseDiff names the first field, and in text the first line, where b
// differs from a; "" when they are equal.
func responseDiff(a, b map[string]any) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		x, y := fmt.Sprintf("%v", a[k]), fmt.Sprintf("%v", b[k])
		if x == y {
			continue
		}
		xl, yl := strings.Split(x, "\n"), strings.Split(y, "\n")
		for i := 0; i < len(xl) || i < len(yl); i++ {
			var l1, l2 string
			if i < len(xl) {
				l1 = xl[i]
			}
			if i < len(yl) {
				l2 = yl[i]
			}
			if l1 != l2 {
				return fmt.Sprintf("%s, line %d:\n  eager: %.600s\n  other: %.600s", k, i+1, l1, l2)
			}
		}
	}
	return ""
}
