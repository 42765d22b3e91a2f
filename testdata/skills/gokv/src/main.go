//go:build wasip1

// Command gokv is the Go SDK's example of host capabilities: tools over
// the skill's key-value store (put, get, delete, list), one that signs a
// message with a secret (sign) and one that sends a channel message
// (notify).
//
// Build (make skills, sdk.mk):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-s -o modules/gokv.wasm ./src
//	go run ../../../sdk/cmd/wasm-table-max -o modules/gokv.wasm modules/gokv.wasm
//
// The second step gives the function table a maximum, which the
// verifier's audit requires and Go's linker leaves out.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"github.com/stockade-dev/stockade/sdk"
)

type keyValue struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type keyOnly struct {
	Key string `json:"key"`
}

type found struct {
	Key   string `json:"key"`
	Found bool   `json:"found"`
	Value string `json:"value,omitempty"`
}

type prefix struct {
	Prefix string `json:"prefix"`
}

type keys struct {
	Keys []string `json:"keys"`
}

type ok struct {
	OK bool `json:"ok"`
}

func put(ctx *sdk.Ctx, in keyValue) (ok, error) {
	if in.Key == "" {
		return ok{}, errors.New("key is empty")
	}
	if err := ctx.KV().Put(in.Key, []byte(in.Value)); err != nil {
		return ok{}, err
	}
	return ok{true}, nil
}

func get(ctx *sdk.Ctx, in keyOnly) (found, error) {
	v, err := ctx.KV().Get(in.Key)
	switch {
	case errors.Is(err, sdk.ErrNotFound):
		return found{Key: in.Key}, nil
	case err != nil:
		return found{}, err
	}
	return found{Key: in.Key, Found: true, Value: string(v)}, nil
}

func del(ctx *sdk.Ctx, in keyOnly) (found, error) {
	err := ctx.KV().Delete(in.Key)
	switch {
	case errors.Is(err, sdk.ErrNotFound):
		return found{Key: in.Key}, nil
	case err != nil:
		return found{}, err
	}
	return found{Key: in.Key, Found: true}, nil
}

func list(ctx *sdk.Ctx, in prefix) (keys, error) {
	k, err := ctx.KV().List(in.Prefix)
	if err != nil {
		return keys{}, err
	}
	return keys{k}, nil
}

type message struct {
	Message string `json:"message"`
}

type signature struct {
	MAC string `json:"mac"` // hex HMAC-SHA256 of the message
}

// sign proves the skill holds the secret without showing it: the output
// is an HMAC-SHA256 of the message under the secret signing_key.
func sign(ctx *sdk.Ctx, in message) (signature, error) {
	key, err := ctx.Secret("signing_key")
	if err != nil {
		return signature{}, err
	}
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(in.Message))
	ctx.Log(sdk.LevelInfo, "signed a message") // the key is never logged
	return signature{hex.EncodeToString(m.Sum(nil))}, nil
}

// notify sends the message to the agent through the channel notify.
func notify(ctx *sdk.Ctx, in message) (ok, error) {
	if err := ctx.Channel("notify").Send(in.Message); err != nil {
		return ok{}, err
	}
	return ok{true}, nil
}

//go:wasmexport put
func putExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(put)) }

//go:wasmexport get
func getExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(get)) }

//go:wasmexport delete
func deleteExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(del)) }

//go:wasmexport list
func listExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(list)) }

//go:wasmexport sign
func signExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(sign)) }

//go:wasmexport notify
func notifyExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(notify)) }

func main() {}
