//go:build !cgo

package cuptiwrap

import (
	"errors"
	"strings"
	"testing"
)

func TestStartNeedsCgo(t *testing.T) {
	c, err := Start(Options{}, func([]Record) {})
	if c != nil || !errors.Is(err, ErrNeedsCgo) || !strings.Contains(err.Error(), "CGO_ENABLED=1") {
		t.Fatalf("Start = %v, %v", c, err)
	}
}

func TestStartMemoryHooksNeedsCgo(t *testing.T) {
	h, err := StartMemoryHooks(HookOptions{}, func(*MemoryCall) {})
	if h != nil || !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("StartMemoryHooks = %v, %v", h, err)
	}
}
