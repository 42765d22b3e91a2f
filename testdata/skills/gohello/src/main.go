//go:build wasip1

// Command gohello is the Go SDK's smallest example skill: one tool, greet,
// that logs a line and answers a greeting. It uses no capability.
//
// Build (make skills, sdk.mk):
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -ldflags=-s -o modules/gohello.wasm ./src
//	go run ../../../sdk/cmd/wasm-table-max -o modules/gohello.wasm modules/gohello.wasm
//
// The second step gives the function table a maximum, which the
// verifier's audit requires and Go's linker leaves out.
package main

import (
	"errors"

	"github.com/stockade-dev/stockade/sdk"
)

type greetInput struct {
	Name string `json:"name"`
	// Rounds of busy work (0 to 1,000,000) before answering: a knob for
	// fuel tests, since fuel_used grows with it.
	Rounds int `json:"rounds,omitempty"`
}

type greetOutput struct {
	Greeting string `json:"greeting"`
	// FuelHint is the number of rounds of busy work done, when any.
	FuelHint int `json:"fuel_hint,omitempty"`
}

// sink keeps the busy work's result alive.
var sink uint32

func greet(ctx *sdk.Ctx, in greetInput) (greetOutput, error) {
	if in.Name == "" {
		return greetOutput{}, errors.New("name is empty")
	}
	if in.Rounds < 0 || in.Rounds > 1_000_000 {
		return greetOutput{}, errors.New("rounds must be 0 to 1000000")
	}
	h := uint32(2166136261) // FNV-1a over the name, Rounds times
	for range in.Rounds {
		for i := 0; i < len(in.Name); i++ {
			h = (h ^ uint32(in.Name[i])) * 16777619
		}
	}
	sink = h
	ctx.Log(sdk.LevelInfo, "greeting someone") // never log input verbatim without need
	return greetOutput{Greeting: "Hello, " + in.Name + "!", FuelHint: in.Rounds}, nil
}

//go:wasmexport greet
func greetExport(ptr, n int32) int64 { return sdk.Handle(ptr, n, sdk.Tool(greet)) }

func main() {}
