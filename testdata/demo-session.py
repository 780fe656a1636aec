# A demo session over a generated project-management dataset (make run):
# the kind of prefix ctxcode builds before a model speaks, then one question.
# %%
import json, os
sorted(os.listdir('data'))
# %%
def load(name):
    return [json.loads(l) for l in open(f'data/{name}.jsonl')]
teams, users, projects, tasks, events = (load(n) for n in
    ['teams', 'users', 'projects', 'tasks', 'events'])
len(teams), len(users), len(projects), len(tasks), len(events)
# %%
sorted({t['status'] for t in tasks}), sorted({e['action'] for e in events})
# %%
# Which team has the most blocked tasks across its projects?
from collections import Counter
team_of = {p['id']: p['team_id'] for p in projects}
blocked = Counter(team_of[t['project_id']] for t in tasks if t['status'] == 'blocked')
blocked.most_common(3)
# %%
best = blocked.most_common(1)[0][0]
ANSWER(next(t['name'] for t in teams if t['id'] == best))
