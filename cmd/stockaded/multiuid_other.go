//go:build !linux

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
)

const (
	dropCommand    = "drop"
	killUIDCommand = "kill-uid"
)

func runKillUID([]string) int { return 2 }

var errMultiUID = errors.New("multi-uid mode is supported on Linux only: run with --single-user")

func runDrop([]string) int { return 2 }

func runSetup([]string) int {
	fmt.Fprintln(os.Stderr, "stockaded setup:", errMultiUID)
	return 1
}

// uidPool exists on Linux only.
type uidPool struct{}

func newUIDPool(*slog.Logger, string, uint32, uint32, string) (*uidPool, error) {
	return nil, errMultiUID
}
func (p *uidPool) tryAcquire() (uint32, bool)              { return 0, false }
func (p *uidPool) acquire(context.Context) (uint32, error) { return 0, errMultiUID }
func (p *uidPool) release(uint32)                          {}
