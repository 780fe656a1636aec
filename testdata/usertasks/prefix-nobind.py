# name: weather-nobind
# language: python
# description: The control of weather (condition B0): the same cells and outputs, but nothing is bound: every cell reads the files it needs.
# rules: Nothing is loaded: read data/stations.csv (elevation_m as an int) and data/readings.jsonl in the cells you write.
# %%
import csv, json, os
sorted(os.listdir('data'))
# %%
(len([dict(r, elevation_m=int(r['elevation_m'])) for r in csv.DictReader(open('data/stations.csv', newline='', encoding='utf-8'))]),
 len([json.loads(line) for line in open('data/readings.jsonl', encoding='utf-8') if line.strip()]))
# %%
([dict(r, elevation_m=int(r['elevation_m'])) for r in csv.DictReader(open('data/stations.csv', newline='', encoding='utf-8'))][0],
 [json.loads(line) for line in open('data/readings.jsonl', encoding='utf-8') if line.strip()][0])
