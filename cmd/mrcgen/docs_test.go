package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docRef is a reference to one of the repository's documents, with the
// section it names, if any: "docs/protocol.md, section 6".
var docRef = regexp.MustCompile(`docs/([A-Za-z0-9_.-]+\.md)(?:,? section (\d+))?`)

// TestDocReferences checks that every document the code, the generated P4
// and the README point users at exists in this repository, with the section
// they name.
func TestDocReferences(t *testing.T) {
	root := filepath.Join("..", "..")
	refs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "build", ".lab", "testdata":
				if path != filepath.Join(root, "p4", "testdata") {
					return filepath.SkipDir
				}
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".tmpl", ".p4", ".md":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range docRef.FindAllStringSubmatch(string(data), -1) {
			refs++
			doc, err := os.ReadFile(filepath.Join(root, "docs", m[1]))
			if err != nil {
				t.Errorf("%s refers to docs/%s, which this repository does not have", path, m[1])
				continue
			}
			if m[2] != "" && !strings.Contains(string(doc), "\n## "+m[2]+". ") {
				t.Errorf("%s refers to section %s of docs/%s, which has no such section", path, m[2], m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if refs == 0 {
		t.Error("no document references found: is the walk looking in the right place?")
	}
}
