//go:build !race

package scenarios_test

// raceDetector is set when the tests run under the race detector (see
// race_on_test.go).
const raceDetector = false
