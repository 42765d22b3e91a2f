//go:build !wasip1

package sdk

// On every platform but wasip1 there is no host: each host function fails
// with ErrNotInSkill, so that the package builds (and its documentation
// renders) everywhere, and a skill's logic can be unit-tested on the
// developer's machine up to its first host call.

func hostABIVersion() int32                           { return abiVersion }
func hostLog(level int32, msg string) int32           { return codeNotInSkill }
func hostHandle(kind int32, name string) int64        { return codeNotInSkill }
func hostHTTPRequest(h int64, req []byte) int64       { return codeNotInSkill }
func hostSecretGet(h int64) int64                     { return codeNotInSkill }
func hostKVGet(h int64, key string) int64             { return codeNotInSkill }
func hostKVPut(h int64, key string, val []byte) int64 { return codeNotInSkill }
func hostKVDelete(h int64, key string) int64          { return codeNotInSkill }
func hostKVList(h int64, prefix string) int64         { return codeNotInSkill }
func hostChannelSend(h int64, msg string) int64       { return codeNotInSkill }
func hostResultRead(dst []byte) int32                 { return 0 }

// Handle is how a skill's tool export runs a Handler; see the package
// documentation. It exists only in skills (GOOS=wasip1): elsewhere it
// returns 0, an empty output.
func Handle(inPtr, inLen int32, h Handler) int64 { return 0 }
