//go:build !race

package kernel

// goRaceDetector is true when the tests run under the race detector.
const goRaceDetector = false
