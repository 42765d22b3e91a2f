//go:build wasip1

package sdk

// The host functions of ABI v1 (executor/wasm), module "stockade". A Go
// string parameter is passed as (ptr i32, len i32); *byte as an i32
// offset. Each import is linked only when the skill uses the SDK function
// that calls it, so a module imports no more than it needs (the verifier's
// audit allows only what the manifest's capabilities unlock).

//go:wasmimport stockade abi_version
func wasmABIVersion() int32

//go:wasmimport stockade log
func wasmLog(level int32, msg string) int32

//go:wasmimport stockade handle
func wasmHandle(kind int32, name string) int64

//go:wasmimport stockade http_request
func wasmHTTPRequest(h int64, req *byte, reqLen int32) int64

//go:wasmimport stockade secret_get
func wasmSecretGet(h int64) int64

//go:wasmimport stockade kv_get
func wasmKVGet(h int64, key string) int64

//go:wasmimport stockade kv_put
func wasmKVPut(h int64, key string, val *byte, valLen int32) int64

//go:wasmimport stockade kv_delete
func wasmKVDelete(h int64, key string) int64

//go:wasmimport stockade kv_list
func wasmKVList(h int64, prefix string) int64

//go:wasmimport stockade channel_send
func wasmChannelSend(h int64, msg string) int64

//go:wasmimport stockade result_read
func wasmResultRead(dst *byte, n int32) int32

// maxArg is the longest slice or string passed to the host: lengths are
// i32.
const maxArg = 1<<31 - 1

func ptr(b []byte) *byte {
	if len(b) == 0 {
		return nil
	}
	return &b[0]
}

func hostABIVersion() int32 { return wasmABIVersion() }

func hostLog(level int32, msg string) int32 {
	if len(msg) > maxArg {
		return codeQuota
	}
	return wasmLog(level, msg)
}

func hostHandle(kind int32, name string) int64 {
	if len(name) > maxArg {
		return codeInvalid
	}
	return wasmHandle(kind, name)
}

func hostHTTPRequest(h int64, req []byte) int64 {
	if len(req) > maxArg {
		return codeQuota
	}
	return wasmHTTPRequest(h, ptr(req), int32(len(req)))
}

func hostSecretGet(h int64) int64 { return wasmSecretGet(h) }

func hostKVGet(h int64, key string) int64 {
	if len(key) > maxArg {
		return codeInvalid
	}
	return wasmKVGet(h, key)
}

func hostKVPut(h int64, key string, val []byte) int64 {
	if len(key) > maxArg || len(val) > maxArg {
		return codeQuota
	}
	return wasmKVPut(h, key, ptr(val), int32(len(val)))
}

func hostKVDelete(h int64, key string) int64 {
	if len(key) > maxArg {
		return codeInvalid
	}
	return wasmKVDelete(h, key)
}

func hostKVList(h int64, prefix string) int64 {
	if len(prefix) > maxArg {
		return codeInvalid
	}
	return wasmKVList(h, prefix)
}

func hostChannelSend(h int64, msg string) int64 {
	if len(msg) > maxArg {
		return codeQuota
	}
	return wasmChannelSend(h, msg)
}

func hostResultRead(dst []byte) int32 {
	if len(dst) > maxArg {
		return 0
	}
	return wasmResultRead(ptr(dst), int32(len(dst)))
}
