# name: pm-nobind
# language: python
# description: The pm demonstration with the same outputs, but no data variable survives: every cell repeats full expressions (the B0 control).
# %%
import json, os
sorted(f for f in os.listdir('data') if f.endswith('.jsonl'))
# %%
tuple(len([json.loads(l) for l in open(f'data/{n}.jsonl')])
      for n in ['teams', 'users', 'projects', 'tasks', 'events'])
# %%
(sorted({json.loads(l)['status'] for l in open('data/tasks.jsonl')}),
 sorted({json.loads(l)['action'] for l in open('data/events.jsonl')}))
# %%
tuple([json.loads(l) for l in open(f'data/{n}.jsonl')][-1] for n in ['teams', 'users', 'projects'])
# %%
[json.loads(l) for l in open('data/tasks.jsonl')][-1]
# %%
[json.loads(l) for l in open('data/events.jsonl')][-1]
