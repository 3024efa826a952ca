//go:build cgo

package devmem_test

const haveCgo = true
