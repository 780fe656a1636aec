"""Edits testdata/report/run after `ctxcode bench` wrote it (see README.md),
so that the fixture holds every kind of line a report must count: a wrong
answer, an unexecuted one, a budget stop, an infra failure left as it is,
an infra failure run again, and spread in the token counts."""
import json, sys

path = sys.argv[1] + "/trials.jsonl"
lines = [json.loads(l) for l in open(path)]
def find(cond, task, rep):
    return next(l for l in lines if (l["condition"], l["task"], l["rep"]) == (cond, task, rep))

t = find("D", "s-t4-2", 2)
t.update(answer=0, correct=False, answer_right=False, verdict="wrong", grade_reason="expected 5, got 0")
t = find("C", "s-t1-1", 1)
t.update(answer_source="unexecuted", answer=json.dumps(t["answer"]), correct=False, answer_right=True, verdict="unexecuted")
t = find("A", "s-t4-2", 1)
t.update(status="max_turns", answer=None, answer_source=None, correct=False, answer_right=False,
         verdict="no_answer", grade_reason="no answer (max_turns)", turns=12, context_tokens=20000, output_tokens=3000)
t = find("B", "s-t1-1", 2)
t.update(status="model_error", **{"class": "infra"}, answer=None, answer_source=None, correct=False, answer_right=False,
         verdict="no_answer", error="model m: gave up after 6 attempts: 500 Internal Server Error", turns=1, output_tokens=0)
for l in lines:
    if l["condition"] == "A" and l["rep"] == 2:
        l["context_tokens"] += 300
t = find("B0", "s-t8-3", 1)
rerun = dict(t, attempt=2, trajectory=t["trajectory"])
t.update(status="kernel_failed", **{"class": "infra"}, answer=None, answer_source=None, correct=False, answer_right=False,
         verdict="no_answer", error="the kernel died more often than --max-restarts")
for l in lines:
    l.pop("answer_source", None) if l.get("answer_source") is None else None
with open(path, "w") as f:
    for l in lines + [rerun]:
        f.write(json.dumps(l, separators=(",", ":")) + "\n")
