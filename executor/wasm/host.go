package wasm

import (
	"context"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
)

// hostFunc is one host function: its name, signature and code.
type hostFunc struct {
	name            string
	params, results []api.ValueType
	fn              api.GoModuleFunc
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func types(t ...api.ValueType) []api.ValueType { return t }

// stockadeFuncs is the host module "stockade", the ABI of abi.go.
var stockadeFuncs = []hostFunc{
	{FnABIVersion, nil, types(i32), hostABIVersion},
	{FnLog, types(i32, i32, i32), types(i32), hostLog},
	{FnHandle, types(i32, i32, i32), types(i64), hostHandle},
	{FnHTTPRequest, types(i64, i32, i32), types(i64), hostHTTPRequest},
	{FnSecretGet, types(i64), types(i64), hostSecretGet},
	{FnKVGet, types(i64, i32, i32), types(i64), hostKVKey("get", false)},
	{FnKVPut, types(i64, i32, i32, i32, i32), types(i64), hostKVPut},
	{FnKVDelete, types(i64, i32, i32), types(i64), hostKVKey("delete", false)},
	{FnKVList, types(i64, i32, i32), types(i64), hostKVKey("list", true)},
	{FnChannelSend, types(i64, i32, i32), types(i64), hostChannelSend},
	{FnResultRead, types(i32, i32), types(i32), hostResultRead},
}

func u32(v uint64) uint32 { return api.DecodeU32(v) }

func ret(stack []uint64, v int64) { stack[0] = api.EncodeI64(v) }

func ret32(stack []uint64, v int32) { stack[0] = api.EncodeI32(v) }

func hostABIVersion(ctx context.Context, mod api.Module, stack []uint64) {
	enter(ctx, mod, 0)
	ret32(stack, ABIVersion)
}

var logLevels = map[uint32]slog.Level{
	LogDebug: slog.LevelDebug, LogInfo: slog.LevelInfo, LogWarn: slog.LevelWarn, LogError: slog.LevelError,
}

func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := u32(stack[0]), u32(stack[1]), u32(stack[2])
	st := enter(ctx, mod, uint64(n))
	lvl, ok := logLevels[level]
	if !ok {
		ret32(stack, int32(ErrInvalid))
		return
	}
	if st.logLeft == 0 {
		st.logTruncated = true
		ret32(stack, int32(ErrQuota))
		return
	}
	// Read no more than can be kept (plus a rune's worth, to cut cleanly).
	keep := uint32(min(uint64(n), uint64(st.logLeft)+utf8.UTFMax))
	if _, ok := st.view(ptr, n); !ok {
		ret32(stack, int32(ErrInvalid))
		return
	}
	b, _ := st.read(ptr, keep)
	text := strings.ToValidUTF8(string(b), "\uFFFD")
	cut := keep < n
	if len(text) > st.logLeft {
		i := st.logLeft
		for i > 0 && !utf8.RuneStart(text[i]) {
			i--
		}
		text, cut = text[:i], true
	}
	if text != "" {
		st.logs = append(st.logs, LogLine{Level: lvl, Text: text})
	}
	st.logLeft -= len(text)
	if cut {
		// The quota is spent: later lines are dropped.
		st.logLeft = 0
		st.logTruncated = true
		ret32(stack, int32(ErrQuota))
		return
	}
	ret32(stack, 0)
}

func hostHandle(ctx context.Context, mod api.Module, stack []uint64) {
	kind, ptr, n := int32(u32(stack[0])), u32(stack[1]), u32(stack[2])
	st := enter(ctx, mod, uint64(n))
	if _, ok := kindNames[kind]; !ok || n > MaxNameBytes {
		ret(stack, int64(ErrInvalid))
		return
	}
	name, ok := st.read(ptr, n)
	if !ok || (kind == KindKV && len(name) != 0) {
		ret(stack, int64(ErrInvalid))
		return
	}
	c := capability{kind: kind, name: string(name)}
	if !st.grants.allows(c) {
		ret(stack, int64(ErrDenied))
		return
	}
	ret(stack, st.newHandle(c))
}

func hostHTTPRequest(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := u32(stack[1]), u32(stack[2])
	st := enter(ctx, mod, uint64(n))
	c := st.use(int64(stack[0]), KindHTTP)
	st.clearResult()
	if n > MaxRequestBytes {
		ret(stack, int64(ErrQuota))
		return
	}
	raw, ok := st.read(ptr, n)
	if !ok {
		ret(stack, int64(ErrInvalid))
		return
	}
	req, err := parseHTTPRequest(raw)
	if err != nil {
		ret(stack, int64(ErrInvalid))
		return
	}
	if req.host != c.name {
		ret(stack, int64(ErrDenied))
		return
	}
	if st.broker == nil {
		ret(stack, int64(ErrUnavailable))
		return
	}
	resp, err := st.broker.HTTP(ctx, c.name, req.canonical)
	ret(stack, st.brokerResult(ctx, resp, err, false))
}

func hostSecretGet(ctx context.Context, mod api.Module, stack []uint64) {
	st := enter(ctx, mod, 0)
	c := st.use(int64(stack[0]), KindSecret)
	st.clearResult()
	if st.broker == nil {
		ret(stack, int64(ErrUnavailable))
		return
	}
	v, err := st.broker.Secret(ctx, c.name)
	ret(stack, st.brokerResult(ctx, v, err, true))
}

// kvKey reads a key or prefix: UTF-8 without control characters, at most
// MaxKeyBytes, and not empty unless it is a prefix.
func (st *callState) kvKey(ptr, n uint32, prefix bool) ([]byte, Code) {
	if n > MaxKeyBytes || (n == 0 && !prefix) {
		return nil, ErrInvalid
	}
	key, ok := st.read(ptr, n)
	if !ok || !utf8.Valid(key) {
		return nil, ErrInvalid
	}
	for _, r := range string(key) {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return nil, ErrInvalid
		}
	}
	return key, 0
}

func (st *callState) kv(ctx context.Context, op string, key, value []byte) int64 {
	if st.broker == nil {
		return int64(ErrUnavailable)
	}
	v, err := st.broker.KV(ctx, op, key, value)
	if op == "put" || op == "delete" {
		v = nil
	}
	return st.brokerResult(ctx, v, err, false)
}

// hostKVKey is kv_get, kv_delete and kv_list: (handle, key or prefix) →
// the result's length or a code.
func hostKVKey(op string, prefix bool) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		ptr, n := u32(stack[1]), u32(stack[2])
		st := enter(ctx, mod, uint64(n))
		st.use(int64(stack[0]), KindKV)
		st.clearResult()
		key, code := st.kvKey(ptr, n, prefix)
		if code != 0 {
			ret(stack, int64(code))
			return
		}
		ret(stack, st.kv(ctx, op, key, nil))
	}
}

func hostKVPut(ctx context.Context, mod api.Module, stack []uint64) {
	kptr, kn, vptr, vn := u32(stack[1]), u32(stack[2]), u32(stack[3]), u32(stack[4])
	st := enter(ctx, mod, uint64(kn)+uint64(vn))
	st.use(int64(stack[0]), KindKV)
	st.clearResult()
	key, code := st.kvKey(kptr, kn, false)
	if code != 0 {
		ret(stack, int64(code))
		return
	}
	if vn > MaxValueBytes {
		ret(stack, int64(ErrQuota))
		return
	}
	value, ok := st.read(vptr, vn)
	if !ok {
		ret(stack, int64(ErrInvalid))
		return
	}
	ret(stack, st.kv(ctx, "put", key, value))
}

func hostChannelSend(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := u32(stack[1]), u32(stack[2])
	st := enter(ctx, mod, uint64(n))
	c := st.use(int64(stack[0]), KindChannel)
	st.clearResult()
	if len(st.messages) >= st.lim.MaxMessages || uint64(n) > uint64(st.lim.MaxMessageBytes) {
		ret(stack, int64(ErrQuota))
		return
	}
	body, ok := st.read(ptr, n)
	if !ok {
		ret(stack, int64(ErrInvalid))
		return
	}
	st.messages = append(st.messages, Message{Channel: c.name, Body: body})
	ret(stack, 0)
}

func hostResultRead(ctx context.Context, mod api.Module, stack []uint64) {
	ptr, n := u32(stack[0]), u32(stack[1])
	st, _ := ctx.Value(callStateKey{}).(*callState)
	var copied uint32
	if st != nil {
		copied = min(n, uint32(len(st.last)))
	}
	st = enter(ctx, mod, uint64(copied))
	dst, ok := st.view(ptr, n)
	if !ok {
		ret32(stack, int32(ErrInvalid))
		return
	}
	ret32(stack, int32(copy(dst, st.last)))
}
