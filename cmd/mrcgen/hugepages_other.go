//go:build !linux

package main

import "time"

// adviseHugePages does nothing but on Linux (hugepages_linux.go).
func adviseHugePages(time.Duration) (stop func()) { return func() {} }
