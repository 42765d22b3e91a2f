package sdk

// A Channel sends messages to one of the manifest's [capabilities]
// channels. The host returns them to the agent with the call's outcome.
type Channel struct {
	ctx  *Ctx
	name string
}

// Channel returns the channel name. Nothing is asked of the host until
// Send.
func (c *Ctx) Channel(name string) Channel { return Channel{c, name} }

// Send sends msg (ABI: handle with KindChannel, then channel_send).
// ErrDenied when the channel is not granted, ErrQuota when the call has
// sent too many messages or msg is too long.
func (ch Channel) Send(msg string) error {
	h, err := ch.ctx.handle(kindChannel, ch.name)
	if err != nil {
		return err
	}
	return done("channel_send", ch.name, hostChannelSend(h, msg))
}
