# name: pm
# language: python
# description: The project-management workspace: teams, users, projects, tasks and events bound as lists of dicts.
# rules: teams, users, projects, tasks and events are lists of dicts.
# %%
import json, os
sorted(f for f in os.listdir('data') if f.endswith('.jsonl'))
# %%
def load(name):
    return [json.loads(l) for l in open(f'data/{name}.jsonl')]
teams, users, projects, tasks, events = (load(n) for n in
    ['teams', 'users', 'projects', 'tasks', 'events'])
len(teams), len(users), len(projects), len(tasks), len(events)
# %%
sorted({t['status'] for t in tasks}), sorted({e['action'] for e in events})
# %%
teams[-1], users[-1], projects[-1]
# %%
tasks[-1]
# %%
events[-1]
