// Package atomicdir replaces a directory with a complete new one in one
// rename, so a reader never sees it half-written, and a failed write
// leaves the old directory as it was. Build directories and exports use it.
package atomicdir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// Swap moves the finished directory tmp to dir. An existing dir is renamed
// aside first, put back if the move fails, and removed once tmp is in
// place. tmp and dir must be on one file system (create tmp beside dir).
func Swap(tmp, dir string) error {
	if _, err := os.Stat(dir); err == nil {
		old := dir + ".old-" + RandomSuffix()
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("replace %s: %w", dir, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			_ = os.Rename(old, dir)
			return fmt.Errorf("replace %s: %w", dir, err)
		}
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("remove previous %s: %w", old, err)
		}
		return nil
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move into %s: %w", dir, err)
	}
	return nil
}

// RandomSuffix is 8 hex digits for temporary and set-aside names.
func RandomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Contents lists what dir holds, for a caller deciding whether Swap may
// replace it: nil with no error when dir does not exist or is empty (there
// is nothing to lose), an error when dir is not a directory or cannot be
// read.
func Contents(dir string) ([]os.DirEntry, error) {
	st, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("output %s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", dir, err)
	}
	return entries, nil
}
