// Package ipc is the one wire format of every Stockade socket: length-prefixed
// msgpack frames, a Hello handshake naming the channel, request ids, a closed set
// of error classes, peer credentials from the kernel, and the fixed-size spawn
// request that the supervisor answers with a file descriptor.
//
// # Frames
//
// A frame is a 4-byte big-endian length followed by that many bytes of msgpack.
// The length is checked against the reader's cap before anything is allocated
// (64 KiB for control messages; a larger cap only for the messages that carry a
// call's output). The body is then walked ([CheckBody]) before the msgpack
// library sees it: every container's declared count must fit in the bytes that
// remain, nesting stays within [MaxDepth], extension types are refused and nothing
// may trail. Only then is it decoded, and only into concrete structs with unknown
// fields refused.
//
// # Envelope
//
// Every frame body is an [Envelope]: protocol version, request id, kind, body. The
// body's type is fixed by the channel and the kind; see messages.go for the
// conversation on each channel.
//
// # Descriptors
//
// Two messages carry open files beside their frame (SCM_RIGHTS, attached to
// the frame's first bytes): the admin channel's install request (the archive
// and its signature) and the verifier channel's resolve reply (one sealed
// memfd per module, [SealedMemfd], checked by the receiver with
// [ReadSealed]). A Conn accepts descriptors only after [Conn.SetAcceptFiles];
// elsewhere one ends the connection. A message must carry exactly the number
// its kind takes ([Kind.FDs]); at most [MaxFDs].
//
// # Reasons
//
// On the verifier and admin channels an error also carries a [Reason] from a
// closed set (reason.go), which the admin CLI maps to exit codes and the
// broker to what an agent sees.
//
// # Security
//
// Bytes from any peer are untrusted until these checks pass: the frame cap, the
// body walk, strict decoding, the version and the kind's place in the channel's
// permit table. A peer's identity is what the kernel says at accept
// ([PeerCred]: SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS), never a field of a
// message. A malformed or unpermitted message from a less-trusted peer ends the
// connection; it is never "handled". Errors cross the wire only as an [ErrorClass]
// and a short message that the sender wrote for that peer; internal details stay
// in local logs.
package ipc
