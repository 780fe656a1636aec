# name: weather
# language: python
# description: Six weather stations and six days of their readings, bound as lists of dicts.
# rules: The data is loaded: stations (from data/stations.csv, elevation_m an int) and readings (from data/readings.jsonl) are lists of dicts.
# %%
import csv, json, os
sorted(os.listdir('data'))
# %%
with open('data/stations.csv', newline='', encoding='utf-8') as f:
    stations = [dict(r, elevation_m=int(r['elevation_m'])) for r in csv.DictReader(f)]
with open('data/readings.jsonl', encoding='utf-8') as f:
    readings = [json.loads(line) for line in f if line.strip()]
len(stations), len(readings)
# %%
stations[0], readings[0]
