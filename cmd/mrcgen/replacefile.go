package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// replaceFiles writes every file (path -> contents) through a temporary file
// in its directory, renamed into place only once all of them are written:
// a failure leaves no half-written file and, before the renames, none of
// them changed.
func replaceFiles(files map[string][]byte) (err error) {
	var tmps []string
	defer func() {
		for _, t := range tmps {
			_ = os.Remove(t)
		}
	}()
	order := make([]string, 0, len(files))
	for path, data := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
		if err != nil {
			return err
		}
		tmps = append(tmps, f.Name())
		order = append(order, path)
		if _, err := f.Write(data); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
		if err := f.Chmod(0o644); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	for i, path := range order {
		if err := os.Rename(tmps[i], path); err != nil {
			return err
		}
	}
	tmps = nil
	return nil
}
