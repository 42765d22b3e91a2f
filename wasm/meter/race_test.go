//go:build race

package meter

// raceEnabled reports a build with the race detector.
const raceEnabled = true
