# A demo session over testdata/demo: the kind of prefix ctxcode builds
# before a model speaks. Run it with `make run`.
# %%
import json, os
sorted(os.listdir('data'))
# %%
def load(name):
    return [json.loads(l) for l in open(f'data/{name}.jsonl')]
teams, users, tasks = (load(n) for n in ['teams', 'users', 'tasks'])
len(teams), len(users), len(tasks)
# %%
sorted({t['status'] for t in tasks})
# %%
from collections import Counter
team_of = {u['id']: u['team'] for u in users}
Counter(team_of[t['assignee']] for t in tasks if t['status'] == 'blocked')
# %%
ANSWER(max(tasks, key=lambda t: t['points'])['id'])
