package bench

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
)

// NewOrderSeed draws a seed for a run's order (Spec.OrderSeed) that no
// earlier run chose.
func NewOrderSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return int64(binary.LittleEndian.Uint64(b[:]) >> 1)
}

// Order is the order a run's trials run in, drawn from seed: rep by rep,
// the tasks in an order drawn for the rep, and for each task every
// (model, condition) in an order drawn for it. So the trials are
// interleaved round-robin: every stretch of len(models) x
// len(conditions) trials asks one task in every condition of every model,
// and what changes with time (the API's latency, throttling, a provider's
// cache) falls on every condition alike, with each condition's trials of
// a task close together in time. The same seed and lists give the same
// order.
func Order(seed int64, models, conditions, tasks []string, reps int) []Key {
	rng := mrand.New(mrand.NewPCG(uint64(seed), 0x6374786f72646572)) // "ctxorder"
	type mc struct{ m, c int }
	var pairs []mc
	for m := range models {
		for c := range conditions {
			pairs = append(pairs, mc{m, c})
		}
	}
	order := make([]Key, 0, len(pairs)*len(tasks)*reps)
	ti := make([]int, len(tasks))
	for rep := 1; rep <= reps; rep++ {
		for i := range ti {
			ti[i] = i
		}
		shuffle(rng, ti)
		for _, t := range ti {
			shuffle(rng, pairs)
			for _, p := range pairs {
				order = append(order, Key{Model: models[p.m], Condition: conditions[p.c], Task: tasks[t], Rep: rep})
			}
		}
	}
	return order
}

// shuffle is Fisher-Yates over s with rng's own numbers, so that the order
// a seed gives depends on this code and the PCG generator, not on how a Go
// release shuffles.
func shuffle[T any](rng *mrand.Rand, s []T) {
	for i := len(s) - 1; i > 0; i-- {
		j := int(rng.Uint64() % uint64(i+1))
		s[i], s[j] = s[j], s[i]
	}
}
