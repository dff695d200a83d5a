package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts a CPU profile into path ("": none) and returns
// the function that ends it: keep false removes the file, so that a run
// that failed leaves no half a profile behind.
func startCPUProfile(path string) (stop func(keep bool) error, err error) {
	if path == "" {
		return func(bool) error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpu-profile %s: %w", path, err)
	}
	return func(keep bool) error {
		pprof.StopCPUProfile()
		err := f.Close()
		if err == nil && keep {
			return nil
		}
		if err != nil {
			err = fmt.Errorf("--cpu-profile %s: %w", path, err)
		}
		return errors.Join(err, os.Remove(path))
	}, nil
}
