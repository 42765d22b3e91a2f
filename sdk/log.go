package sdk

// A Level is a log line's severity.
type Level int32

// The levels a skill logs at (executor/wasm's Log* constants). The host
// refuses any other with ErrInvalid.
const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

// Log sends a line to the host's log, attributed to the skill and the
// call (ABI: log). Once the call's log quota is spent, the host cuts the
// line to what fits, drops later ones, and Log returns ErrQuota. Invalid
// UTF-8 is replaced with U+FFFD. Never log a secret.
func (c *Ctx) Log(level Level, msg string) error {
	if c.closed {
		return &opError{op: "log", err: ErrInvalid}
	}
	return done("log", "", int64(hostLog(int32(level), msg)))
}
